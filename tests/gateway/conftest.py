"""Gateway fixtures: a real uvicorn gateway process (free port) on the secure Redis of
``tests/conftest.py`` (default user password-protected), and tokens made the way
``blackboard token create`` makes them.

- ``gateway``: a running gateway (module-scoped process; the Redis is emptied and its
  users reset before each test). ``gateway.token("a", teams=["t"])`` -> agent token,
  ``gateway.operator_token()`` -> operator token, ``gateway.client(token)`` -> httpx.Client.
- ``start_gateway(**settings)``: another gateway process with its own settings (e.g.
  ``rate=2, burst=2``), stopped at the end of the test.
- ``browser``: headless Chromium through playwright (module-scoped; the dashboard's
  tests), skipped with the reason when playwright or Chromium is missing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.gateway.gateway_support import GatewayProc, spawn_gateway
from tests.support_secure import Secure, reset_secure

if TYPE_CHECKING:
    from playwright.sync_api import Browser

#: The Chromium the browser tests drive (Debian's, unless BLACKBOARD_CHROMIUM names one).
CHROMIUM = os.environ.get("BLACKBOARD_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - the [dev] extra brings playwright
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt install chromium, or set "
                    "BLACKBOARD_CHROMIUM)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def gateway_process(secure_redis: Secure) -> Iterator[GatewayProc]:
    reset_secure(secure_redis)
    gw = spawn_gateway(secure_redis)
    yield gw
    gw.stop()


@pytest.fixture()
def gateway(gateway_process: GatewayProc) -> GatewayProc:
    """The module's gateway on an emptied Redis (data, scripts, users reset)."""
    reset_secure(gateway_process.redis)
    assert gateway_process.proc.poll() is None, gateway_process.output()
    return gateway_process


@pytest.fixture()
def start_gateway(secure_redis: Secure) -> Iterator[Callable[..., GatewayProc]]:
    started: list[GatewayProc] = []

    def start(env_extra: dict[str, str] | None = None, **settings: Any) -> GatewayProc:
        gw = spawn_gateway(secure_redis, env_extra, **settings)
        started.append(gw)
        return gw

    yield start
    for gw in started:
        gw.stop()
