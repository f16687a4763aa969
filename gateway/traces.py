"""Each REST request a span (:mod:`blackboard.tracing`), when tracing is on.

A request carrying a W3C ``traceparent`` header continues that trace, so an agent that
traces its own work sees the gateway and the memory's writes under its span; a malformed
header starts a new trace. Off, a request pays one flag check.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from blackboard import tracing

from .metrics import ResponseStatus, route_of

__all__ = ["TracingMiddleware"]


class TracingMiddleware:
    """A ``gateway.request`` span around every HTTP request while tracing is on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not tracing.ENABLED or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        parent = dict(scope.get("headers") or ()).get(b"traceparent")
        answer = ResponseStatus(send)
        with tracing.span("gateway.request", {"http.request.method": scope["method"]},
                          parent=tracing.valid_traceparent(parent)) as sp:
            try:
                await self.app(scope, receive, answer.send)
            finally:
                sp.set_attribute("http.route", route_of(scope))
                sp.set_attribute("http.response.status_code", answer.code)
