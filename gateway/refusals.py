"""The gateway's own refusals (not the library's), each with its HTTP status and kind.
Free of web-framework imports: the token commands use them without the gateway extra."""

from __future__ import annotations

from blackboard import BlackboardError

__all__ = ["BodyTooLarge", "BookkeepingUnavailable", "Forbidden", "GatewayError",
           "InvalidParameter", "Misdirected", "TooManyRequests", "Unauthorized"]


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


class InvalidParameter(GatewayError):
    """A query parameter or header the request model cannot check by its type (a level
    name, a stream id in range): 422 naming it in ``field``, like the model's own."""

    status, kind = 422, "validation"


class Misdirected(GatewayError):
    """An ``--insecure-local`` gateway asked under a foreign ``Host`` or ``Origin`` (a page
    reaching it by DNS rebinding): 421, as the MCP transport answers it."""

    status, kind = 421, "misdirected"


class BookkeepingUnavailable(GatewayError):
    """A connection of the gateway's own (the rate buckets', or an ``--insecure-local``
    gateway's only one) cannot reach Redis or log in: the gateway's configuration is at
    fault, not the caller's token (503, never 401)."""

    status, kind = 503, "ServerUnavailable"
