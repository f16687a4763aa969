"""Run the gateway under uvicorn (``blackboard gateway``, ``python -m gateway``)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from .settings import ENV_PREFIX, GatewaySettings

__all__ = ["main", "serve"]


async def preflight(settings: GatewaySettings) -> None:
    """Fail before serving, in one line, when the gateway's own connection (rate buckets,
    readiness) cannot log in: uvicorn would report it as a startup traceback."""
    from blackboard import Blackboard, InvalidArgument
    from blackboard.errors import LoginRefused

    if settings.rate <= 0 and settings.insecure_local:
        return
    refused = False
    try:
        async with Blackboard.connect(settings.bookkeeping_url or None):
            pass
    except LoginRefused:
        refused = True
    if refused:  # raised out here: the CLI's one-line report follows __context__ too
        raise InvalidArgument(
            f"Redis refused the gateway's own login: its connection (per-token rate "
            f"buckets, /readyz) needs a service or admin user: set {ENV_PREFIX}SERVICE_URL "
            f"(redis://bb-service:PASSWORD@host/0), or {ENV_PREFIX}RATE=0")


def serve(settings: GatewaySettings, *, workers: int = 1,
          on_ready: Callable[[], None] | None = None) -> None:
    """Serve until interrupted; ``on_ready`` runs once the port listens. ``workers`` > 1:
    that many processes on one port, each building its app from the environment (the
    settings are passed down through it; ``on_ready`` then runs as they start)."""
    import asyncio

    import uvicorn

    from .app import create_app
    from .logs import install

    asyncio.run(preflight(settings))
    install()  # before the app: one line per record, written off the event loop

    if workers > 1:
        os.environ.update({ENV_PREFIX + f.name.upper(): str(getattr(settings, f.name))
                           for f in fields(settings)})
        if on_ready is not None:
            on_ready()
        uvicorn.run("gateway.app:app_from_env", factory=True, host=settings.host,
                    port=settings.port, workers=workers, log_level="warning",
                    access_log=False, log_config=None)
        return
    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started and on_ready is not None:  # not started: the bind failed
                on_ready()

    Server(uvicorn.Config(create_app(settings), host=settings.host, port=settings.port,
                          log_level="warning", access_log=False, log_config=None)).run()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m gateway")
    p.add_argument("--host")
    p.add_argument("--port", type=int)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--insecure-local", action="store_true", default=None)
    a = p.parse_args(argv)
    serve(GatewaySettings.from_env(host=a.host, port=a.port, insecure_local=a.insecure_local),
          workers=a.workers)
