"""The dashboard's tools beyond its views of issue 19: the header's search, charts over
time and (operator) token list and revoke. Each route resolves the caller and answers 403
to an agent token where the data is the operator's; paging of a scope's entries is on
``GET /v1/dashboard/scopes/{scope}/entries`` (:mod:`gateway.routes.dashboard`).
Included by :func:`gateway.routes.dashboard.mount`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from pydantic import BaseModel, ConfigDict

from ..dash import charts as charts_mod
from ..dash import ops
from ..dash import search as search_mod
from ..dash import tokens as tokens_mod
from ..refusals import InvalidParameter
from .deps import CallerDep
from .responses import BODY_ERRORS

__all__ = ["router"]

router = APIRouter(prefix="/v1/dashboard", tags=["dashboard"], responses=BODY_ERRORS)


class RevokeRequest(BaseModel):
    """``confirm`` must be true: the page asks the operator first, and a script must say so."""

    model_config = ConfigDict(extra="forbid")
    confirm: bool


@router.get("/search")
async def search(caller: CallerDep, request: Request,
                 q: Annotated[str, Query(min_length=1, max_length=500)],
                 limit: Annotated[int, Query(ge=1, le=50)] = 20) -> dict[str, Any]:
    """Recall ``q`` across every scope the caller may read; short rows for the header's
    search box."""
    return await search_mod.search(request.app, caller, q, limit)


@router.get("/charts")
async def charts(caller: CallerDep, request: Request,
                 minutes: Annotated[int, Query(ge=1, le=60)] = 60) -> dict[str, Any]:
    """Series over the last ``minutes`` from the gateway's samples: memory size and
    events/s of the caller's scopes; for an operator also workers' events/s, requests/s,
    lag, pending, inbox and dead letters."""
    return await charts_mod.series_for(request.app.state.charts, caller, minutes)


@router.get("/tokens")
async def tokens(caller: CallerDep) -> dict[str, Any]:
    """Operator: every token (id, agent, teams, user, created; never a secret)."""
    return await tokens_mod.list_for(caller)


@router.post("/tokens/{token_id}/revoke")
async def revoke(caller: CallerDep, request: Request,
                 token_id: Annotated[str, Path(pattern=r"^[A-Za-z0-9_-]{1,64}$")],
                 body: RevokeRequest) -> dict[str, Any]:
    """Operator: revoke a token as `blackboard token revoke` does (its password removed
    from its Redis user, the user's connections killed); ``confirm`` must be true."""
    ops.require_operator(caller)  # an agent learns nothing, not even the confirm rule
    if not body.confirm:
        raise InvalidParameter("revoke needs \"confirm\": true", field="confirm")
    return await tokens_mod.revoke_for(caller, request.app.state.service, token_id,
                                       request.app.state.callers)
