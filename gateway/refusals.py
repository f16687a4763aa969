"""The gateway's own refusals (not the library's), each with its HTTP status and kind.
Free of web-framework imports: the token commands use them without the gateway extra."""

from __future__ import annotations

from blackboard import BlackboardError

__all__ = ["BodyTooLarge", "Forbidden", "GatewayError", "TooManyRequests", "Unauthorized"]


class GatewayError(BlackboardError):
    """A refusal of the gateway itself (not the library's): ``status`` and ``kind``."""

    status = 400
    kind = "bad_request"

    def __init__(self, detail: str, *, field: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field
        self.headers = headers or {}


class Unauthorized(GatewayError):
    status, kind = 401, "unauthorized"


class Forbidden(GatewayError):
    status, kind = 403, "AccessDenied"


class BodyTooLarge(GatewayError):
    status, kind = 413, "body_too_large"


class TooManyRequests(GatewayError):
    """A token over its rate limit (429; the remote client raises
    :class:`memory.remote_decode.RateLimited` for it)."""

    status, kind = 429, "rate_limited"
