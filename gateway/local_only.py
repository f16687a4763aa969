"""``--insecure-local``: answer only requests addressed to this machine by name.

Without tokens, the loopback bind is the only protection, and DNS rebinding defeats it: a
web page on ``evil.example`` whose name then resolves to 127.0.0.1 makes the browser send
its requests here, with ``Host: evil.example`` (and ``Origin: http://evil.example`` on
anything but a plain GET). So every request -- REST, event streams, the dashboard's API
and its static files, MCP -- whose ``Host`` is not a loopback name, or that carries an
``Origin`` other than a loopback one, is refused with 421 before any route runs. A request
without ``Host`` or ``Origin`` (a script, curl with HTTP/1.0) is no browser's.
"""

from __future__ import annotations

import re

from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import error_response
from .refusals import Misdirected

__all__ = ["LocalOnly", "local_host", "local_origin"]

_LOOPBACK = r"(?:localhost|127\.0\.0\.1|\[::1\])"
_HOST = re.compile(_LOOPBACK + r"(?::\d{1,5})?", re.I)
_ORIGIN = re.compile(r"https?://" + _LOOPBACK + r"(?::\d{1,5})?", re.I)


def local_host(host: str) -> bool:
    return bool(_HOST.fullmatch(host))


def local_origin(origin: str) -> bool:
    return bool(_ORIGIN.fullmatch(origin))


class LocalOnly:
    """Pure ASGI middleware: 421 for a foreign ``Host`` or ``Origin`` (http and websocket)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = dict(scope.get("headers") or ())
            host = headers.get(b"host", b"").decode("latin-1")
            origin = headers.get(b"origin", b"").decode("latin-1")
            bad = ("host", host) if host and not local_host(host) else (
                ("origin", origin) if origin and not local_origin(origin) else None)
            if bad is not None:
                field, value = bad
                refusal = Misdirected(
                    f"this --insecure-local gateway answers only requests addressed to "
                    f"localhost; {field.capitalize()} {value[:80]!r} is foreign (a page "
                    "reaching it by DNS rebinding?)", field=field)
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await error_response(refusal)(scope, receive, send)
                return
        await self.app(scope, receive, send)
