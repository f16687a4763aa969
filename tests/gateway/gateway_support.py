"""The gateway as the tests run it: ``spawn_gateway`` starts `python -m gateway` on a free
port against a secure Redis (``tests/support_secure.py``); ``GatewayProc`` is the running
process with helpers to make tokens and clients. The fixtures are in ``conftest.py``; this
module is what tests import (pytest loads a conftest under its own name, so importing one
would make a second copy of it)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from blackboard import Blackboard
from tests.support_secure import Secure

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_async(coro_fn: Callable[[], Any]) -> Any:
    """Run a coroutine on a fresh loop in a thread (works from sync and async tests)."""
    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        return ex.submit(lambda: asyncio.run(coro_fn())).result(60)


@dataclass
class GatewayProc:
    url: str
    redis: Secure
    proc: subprocess.Popen[bytes]
    log: Path
    env: dict[str, str] = field(default_factory=dict)

    def admin(self) -> Any:
        return Blackboard.connect(self.redis.url, partitions=8, username="default",
                                  password=self.redis.password)

    def token(self, agent: str, teams: Sequence[str] | None = (), *,
              operator: bool = False) -> str:
        """A token as `blackboard token create` makes it (the agent's user granted)."""
        return str(self.token_record(agent, teams, operator=operator)[1])

    def token_record(self, agent: str, teams: Sequence[str] | None = (), *,
                     operator: bool = False) -> tuple[Any, str]:
        from gateway.tokens import create_token

        async def go() -> tuple[Any, str]:
            async with self.admin() as bb:
                return await create_token(bb, agent, teams, operator=operator)

        return tuple(run_async(go))  # type: ignore[return-value]

    def operator_token(self, agent: str = "ops") -> str:
        return self.token(agent, (), operator=True)

    def revoke(self, token_id: str) -> None:
        from gateway.tokens import revoke_token

        async def go() -> None:
            async with self.admin() as bb:
                await revoke_token(bb, token_id)

        run_async(go)

    def client(self, token: str | None = None, **kw: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **kw)

    def metrics(self) -> str:
        return httpx.get(self.url + "/metrics", timeout=10).text

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def spawn_gateway(redis: Secure, env_extra: dict[str, str] | None = None,
                  **settings: Any) -> GatewayProc:
    """Start `python -m gateway` on a free port (``settings``: BLACKBOARD_GATEWAY_<K>,
    ``env_extra``: other variables); wait until /healthz answers."""
    port = free_port()
    env = dict(os.environ)
    env.update({
        "BLACKBOARD_GATEWAY_REDIS_URL": redis.url,
        "BLACKBOARD_GATEWAY_SERVICE_URL": redis.admin_url,
        "BLACKBOARD_GATEWAY_RATE": "10000",
        "BLACKBOARD_GATEWAY_BURST": "10000",
        # as the secure fixtures pin it (the gateway's own connection adopts it, but on an
        # empty server it would pin the default first)
        "BLACKBOARD_PARTITIONS": "8",
        "PYTHONPATH": str(ROOT),
    })
    env.update({f"BLACKBOARD_GATEWAY_{k.upper()}": str(v) for k, v in settings.items()})
    env.update(env_extra or {})
    env.pop("BLACKBOARD_REDIS_URL", None)
    log = Path(tempfile.mkstemp(prefix="gateway-", suffix=".log")[1])
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "gateway", "--port", str(port)],
                                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    gw = GatewayProc(f"http://127.0.0.1:{port}", redis, proc, log, env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gateway exited {proc.returncode}:\n{gw.output()}")
        try:
            if httpx.get(gw.url + "/healthz", timeout=1).status_code == 200:
                return gw
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    gw.stop()
    raise RuntimeError(f"gateway did not answer /healthz in 60 s:\n{gw.output()}")


def ready_within(url: str, limit_s: float) -> tuple[float | None, str]:
    """Seconds until the gateway's /readyz answered 200 (None: not within ``limit_s``),
    and the last body (or the last error) it gave."""
    t0 = time.monotonic()
    body = ""
    while time.monotonic() - t0 < limit_s:
        try:
            r = httpx.get(url + "/readyz", timeout=1)
            body = r.text
            if r.status_code == 200:
                return time.monotonic() - t0, body
        except httpx.HTTPError as exc:
            body = repr(exc)
        time.sleep(0.1)
    return None, body
