"""The failures each route declares in the OpenAPI schema, all with the one error body
(:class:`memory.response_bodies.ErrorBody`), so a client (or a fuzzer) finds every status it
can get described: ``tests/gateway/test_openapi_fuzz.py`` checks the answers against it."""

from __future__ import annotations

from typing import Any

from memory.response_bodies import ErrorBody

__all__ = ["BODY_ERRORS", "READ_ERRORS", "errors"]

_WHY = {
    400: "The body is not JSON.",
    401: "No token, or one the gateway does not accept.",
    403: "The caller's user may not do this (its scopes, or an operator route).",
    404: "No such entry, scope or session.",
    409: "A version conflict, or the scope is full.",
    413: "The body or the entry is over its size limit.",
    422: "A field is invalid; ``field`` names it.",
    429: "The caller's rate limit.",
    503: "Redis is unavailable or not set up for the gateway.",
    507: "The caller's quota is used up.",
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for ``codes``, each with the error body."""
    return {c: {"model": ErrorBody, "description": _WHY[c]} for c in codes}


#: Routes that only read (query and path parameters, no body).
READ_ERRORS = errors(401, 403, 404, 422, 429, 503)
#: Routes with a JSON body (writes add 409 and 507 where a write can meet them).
BODY_ERRORS = errors(400, 401, 403, 404, 409, 413, 422, 429, 503, 507)
