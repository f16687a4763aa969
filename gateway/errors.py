"""Every failure as ``{"error", "detail", "field"}`` with its status; never a traceback.

The library's exceptions keep their names as ``error`` (the remote client maps them back
to the same types); Redis's own refusals (``NOPERM``: a confined user reaching for a key
it may not touch; the library hands them over as ``AccessDenied(by_server=True)``) become
``AccessDenied`` 403, a refused login 401, an unreachable server 503, Redis over its
``maxmemory`` (``OutOfMemory``: nothing was written) 507 Insufficient Storage, a full quota
(``QuotaExceeded``) 507 and an entry over a quota on its own 413; any other error
Redis answered that the library did not turn into one of its own is a 500, logged.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from blackboard import (
    AccessDenied,
    BlackboardError,
    ConfigMismatch,
    EntryTooLarge,
    InvalidArgument,
    InvalidKey,
    InvalidMetadata,
    InvalidScope,
    InvalidTag,
    InvalidValue,
    NotFound,
    ScopeDamaged,
    ScopeFull,
    ServerUnavailable,
    VersionConflict,
)
from blackboard.errors import LoginRefused, OutOfMemory, QuotaExceeded
from memory.errors import InvalidClaim, NotABelief
from memory.response_bodies import ErrorBody

from .logs import mark_logged
from .refusals import (
    TOKEN_HINT,
    BodyTooLarge,
    Forbidden,
    GatewayError,
    TooManyRequests,
    Unauthorized,
    bearer_challenge,
)
from .validation_hints import body_model, hint

__all__ = ["BodyTooLarge", "Forbidden", "GatewayError", "TooManyRequests", "Unauthorized",
           "error_response", "install_handlers", "status_of"]

log = logging.getLogger(__name__)


# Most specific first: the first isinstance match wins.
_LIBRARY: tuple[tuple[type[BaseException], int, str | None], ...] = (
    (EntryTooLarge, 413, "value"),
    (InvalidTag, 422, "tags"),
    (InvalidKey, 422, "key"),
    (InvalidValue, 422, "value"),
    (InvalidMetadata, 422, "metadata"),
    (InvalidScope, 422, "scope"),
    (NotABelief, 422, "belief_id"),
    (InvalidClaim, 422, "claim"),
    (InvalidArgument, 422, None),
    (AccessDenied, 403, None),
    (NotFound, 404, None),
    (VersionConflict, 409, "expected_version"),
    (ScopeFull, 409, None),
    (ConfigMismatch, 503, None),
    (ServerUnavailable, 503, None),
    (OutOfMemory, 507, None),  # Redis over maxmemory: nothing written, retry once freed
)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:500]


def refused_by_redis(exc: BaseException) -> bool:
    """Whether Redis itself refused (an ACL failure, directly or inside a script) rather
    than the library's access check."""
    return isinstance(exc, AccessDenied) and exc.by_server


def _unreachable(exc: BaseException) -> bool:
    """Redis's own connection or timeout error, handed over as it came (not a refused
    login, not the library's "cannot reach Redis at ..." when connecting)."""
    return (isinstance(exc, ServerUnavailable) and not isinstance(exc, LoginRefused)
            and exc.redis_message is not None)


def _unnamed_redis_error(exc: BaseException) -> bool:
    """An error Redis answered that the library hands over as it came, without a name
    the API maps (a WRONGTYPE, OOM or other error reply outside the scripts)."""
    return (isinstance(exc, BlackboardError) and exc.redis_message is not None
            and not isinstance(exc, AccessDenied | ServerUnavailable | OutOfMemory
                               | ScopeDamaged))


def status_of(exc: BaseException) -> tuple[int, ErrorBody, dict[str, str]]:
    """The status, body and extra headers answering ``exc``; a 401 with its bearer
    challenge and a detail naming the command that makes a token."""
    status, body, headers = _status_of(exc)
    if status == 401:
        if "blackboard token create" not in body.detail:
            body = body.model_copy(update={"detail": f"{body.detail}: {TOKEN_HINT}"})
        headers = headers | bearer_challenge(getattr(exc, "token_sent", True))
    return status, body, headers


def _status_of(exc: BaseException) -> tuple[int, ErrorBody, dict[str, str]]:
    if refused_by_redis(exc):
        return 403, ErrorBody(error="AccessDenied",
                              detail=_one_line(f"refused by Redis (NOPERM): {exc}")), {}
    if isinstance(exc, GatewayError):
        return exc.status, ErrorBody(error=exc.kind, detail=_one_line(exc.detail),
                                     field=exc.field), exc.headers
    if any(isinstance(e, LoginRefused) for e in (exc, exc.__cause__)):
        return 401, ErrorBody(error="unauthorized",
                              detail=_one_line(f"Redis refused the login: {exc}")), {}
    if _unreachable(exc):
        return 503, ErrorBody(error="ServerUnavailable",
                              detail=_one_line(f"Redis unavailable: {exc}")), {}
    if _unnamed_redis_error(exc):
        return _internal(exc)
    if isinstance(exc, QuotaExceeded):
        # 413: this entry alone is over the quota, it could never fit; 507: the quota is
        # full (free room, or ask the operator for more). Nothing was written either way.
        return (413 if exc.never_fits else 507), ErrorBody(
            error="QuotaExceeded", detail=_one_line(str(exc)), field="value"), {}
    for typ, status, field in _LIBRARY:
        if isinstance(exc, typ):
            return status, ErrorBody(error=type(exc).__name__, detail=_one_line(str(exc)),
                                     field=field), {}
    if isinstance(exc, BlackboardError):
        # SemanticRecallUnavailable, EmbedderUnavailable, ScopeDamaged: the server side
        # cannot serve it as configured.
        return 503, ErrorBody(error=type(exc).__name__, detail=_one_line(str(exc))), {}
    return _internal(exc)


def _internal(exc: BaseException) -> tuple[int, ErrorBody, dict[str, str]]:
    # One line (gateway.logs: the traceback only under BLACKBOARD_DEBUG, written off the
    # loop); uvicorn's second report of the same exception is dropped.
    log.error("unexpected error", exc_info=exc)
    mark_logged(exc)
    return 500, ErrorBody(error="internal",
                          detail="internal error (logged by the gateway)"), {}


def error_response(exc: BaseException) -> JSONResponse:
    status, body, headers = status_of(exc)
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


#: Where a request's fields come from, as FastAPI's validation errors begin their location.
_WHERE = frozenset({"body", "query", "path", "header", "cookie"})


def _validation(exc: RequestValidationError, model: type[BaseModel] | None = None
                ) -> JSONResponse:
    """The first error, naming its field and saying what to send there (``model``: the
    route's body model, whose fields an unknown field's hint lists)."""
    errs = exc.errors()
    first = errs[0] if errs else {}
    # The first part says where the field was sent (a field may be named "query" too)
    parts = [str(p) for p in first.get("loc", ())]
    if parts and parts[0] in _WHERE:
        parts = parts[1:]
    if first.get("type") == "json_invalid":  # a position in the text, not a field
        parts = []
    field = ".".join(parts) or None
    msg = hint(dict(first), model) if first else "invalid request"
    more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
    body = ErrorBody(error="validation",
                     detail=_one_line(f"{field or 'body'}: {msg}{more}"), field=field)
    return JSONResponse(body.model_dump(), status_code=422)


def _http(exc: HTTPException) -> JSONResponse:
    kind = {404: "NotFound", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    body = ErrorBody(error=kind, detail=_one_line(str(exc.detail)))
    return JSONResponse(body.model_dump(), status_code=exc.status_code,
                        headers=getattr(exc, "headers", None))


def install_handlers(app: FastAPI) -> None:
    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return _validation(exc, body_model(request))

    async def on_http(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        return _http(exc)

    async def on_any(_: Request, exc: Exception) -> JSONResponse:
        return error_response(exc)

    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(HTTPException, on_http)
    app.add_exception_handler(Exception, on_any)
