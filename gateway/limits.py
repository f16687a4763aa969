"""Request body limit (413) as a pure ASGI middleware: refused from ``Content-Length``
before anything is read, or as soon as a streamed body passes the limit."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import BodyTooLarge, error_response

__all__ = ["BodyLimit"]


class BodyLimit:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    def _refusal(self) -> BodyTooLarge:
        return BodyTooLarge(f"request body over the gateway's limit of {self.limit} bytes "
                            "(BLACKBOARD_GATEWAY_BODY_LIMIT)")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for k, v in scope.get("headers", ()):
            if k == b"content-length":
                try:
                    n = int(v)
                except ValueError:
                    n = -1
                if n > self.limit:
                    await error_response(self._refusal())(scope, receive, send)
                    return
        seen = 0
        over = False

        async def receive_() -> Message:
            nonlocal seen, over
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    over = True
                    # Whatever the app answers to a failed read (FastAPI: 400), send_
                    # replaces it with the 413.
                    raise self._refusal()
            return msg

        replaced = False

        async def send_(msg: Message) -> None:
            nonlocal replaced
            if over:
                if not replaced:
                    replaced = True
                    await error_response(self._refusal())(scope, receive, send)
                return
            await send(msg)

        try:
            await self.app(scope, receive_, send_)
        except BodyTooLarge:
            if not replaced:
                await error_response(self._refusal())(scope, receive, send)
