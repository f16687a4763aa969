"""``/healthz`` (the process answers), ``/readyz`` (Redis reachable, scripts loaded: what
is missing after a Redis restart or SCRIPT FLUSH is loaded first), ``/metrics``
(Prometheus text; the workers' progress ages read at most every few seconds)."""

from __future__ import annotations

import contextlib

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from blackboard import AccessDenied, Blackboard
from blackboard.acl import AclAdmin
from memory.response_bodies import ErrorBody

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"model": ErrorBody, "description":
                                          "Redis unreachable or the scripts not loaded."}})
async def readyz(request: Request) -> Response:
    svc = request.app.state.service
    if svc is None:
        return JSONResponse({"status": "ok", "redis": "not checked (no service connection)"})
    try:
        missing = await _missing_after_reload(svc)
    except Exception as exc:  # any failure means not ready; the reason is the answer
        return JSONResponse({"error": "not_ready", "detail": f"Redis: {exc}", "field": None},
                            status_code=503)
    if missing:
        return JSONResponse({"error": "not_ready",
                             "detail": f"scripts not loaded: {', '.join(missing)}",
                             "field": None}, status_code=503)
    return JSONResponse({"status": "ok"})


@router.get("/metrics", response_class=PlainTextResponse, responses={
    200: {"content": {"text/plain": {"schema": {"type": "string"}}},
          "description": "Prometheus text exposition."}})
async def metrics(request: Request) -> Response:
    await request.app.state.metrics.progress.refresh(request.app.state.service)
    return Response(request.app.state.metrics.render(), media_type=CONTENT_TYPE_LATEST)


async def _missing_after_reload(svc: Blackboard) -> list[str]:
    """The scripts still missing once the service connection loaded what was missing: a
    restarted Redis holds none, and agents may only EVALSHA. A service user that may not
    SCRIPT LOAD leaves them to `blackboard acl load-scripts`; the answer names them."""
    missing = await svc.missing_scripts()
    if missing:
        with contextlib.suppress(AccessDenied):
            await AclAdmin(svc).load_scripts()
        missing = await svc.missing_scripts()
    return missing
