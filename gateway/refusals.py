"""The gateway's own refusals (not the library's), each with its HTTP status and kind.
Free of web-framework imports: the token commands use them without the gateway extra."""

from __future__ import annotations

from blackboard import BlackboardError

__all__ = ["TOKEN_HINT", "BodyTooLarge", "BookkeepingUnavailable", "Forbidden",
           "GatewayError", "InvalidParameter", "Misdirected", "TooManyRequests",
           "Unauthorized", "bearer_challenge"]


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


#: What every 401 tells the caller to do: a client we did not write (MCP Inspector) shows
#: the body's detail, and without a remedy it guessed at OAuth instead.
TOKEN_HINT = ("create a token with `blackboard token create --agent A` and send "
              "`Authorization: Bearer <token>`")


class Unauthorized(GatewayError):
    """``token_sent``: a token came and was refused (the challenge then says
    ``error="invalid_token"``, RFC 6750), rather than none at all."""

    status, kind = 401, "unauthorized"

    def __init__(self, detail: str, *, token_sent: bool = True) -> None:
        super().__init__(detail)
        self.token_sent = token_sent


def bearer_challenge(token_sent: bool) -> dict[str, str]:
    """The ``WWW-Authenticate`` header of a 401 (RFC 6750): the scheme and realm, and
    ``error="invalid_token"`` when a token was sent but refused."""
    value = 'Bearer realm="blackboard"' + (', error="invalid_token"' if token_sent else "")
    return {"WWW-Authenticate": value}


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
