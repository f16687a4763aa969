"""The dashboard's timeline view (issue 28): ``GET /v1/dashboard/timeline`` and
``/v1/dashboard/timeline/expand`` answer as REST's ``/v1/timeline`` and
``/v1/timeline/expand`` for the agent named by ``agent`` (:mod:`gateway.dash.timeline`: an
agent token only its own, 403 otherwise; an operator token any agent). The parameters are
REST's, checked the same way. Included by :func:`gateway.routes.dashboard.mount`."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from blackboard import InvalidArgument
from memory.response_bodies import EntryOut

from ..dash import timeline as timeline_mod
from .deps import CallerDep
from .params import AgentQuery
from .responses import BODY_ERRORS
from .timeline import AT_PATTERN, LEVEL_PATTERN, SEGMENT_PATTERN, SegmentOut, _named

__all__ = ["router"]

router = APIRouter(prefix="/v1/dashboard", tags=["dashboard"], responses=BODY_ERRORS)

@router.get("/timeline")
async def timeline(
    caller: CallerDep,
    agent: AgentQuery = None,
    at: Annotated[str | None, Query(max_length=40, pattern=AT_PATTERN, description=(
        "2023, 2023-05, 2023-05-08 or a node id (default: the root)."))] = None,
    level: Annotated[str | None, Query(max_length=16, pattern=LEVEL_PATTERN, description=(
        "year, month, week or day holding `at`."))] = None,
    depth: Annotated[int, Query(ge=0, le=5, description="Levels of children.")] = 1,
) -> dict[str, Any]:
    """``{"agent", "agents", "tree", "missing"}``: ``tree`` is ``GET /v1/timeline``'s
    answer for ``agent`` (null while its table has no such node: ``missing`` says so);
    ``agents``: whose tables the token may pick."""
    try:
        return await timeline_mod.timeline_for(caller, agent, level, at, depth)
    except InvalidArgument as exc:
        raise _named(exc) from None


@router.get("/timeline/expand", response_model=SegmentOut)
async def expand(
    caller: CallerDep,
    segment: Annotated[str, Query(min_length=1, max_length=260, pattern=SEGMENT_PATTERN,
                                  description="A segment's ref: <scope>#s2023-05-08.0.")],
    agent: AgentQuery = None,
) -> SegmentOut:
    """``GET /v1/timeline/expand``'s answer for ``agent``'s segment: its raw entries."""
    try:
        got = await timeline_mod.expand_for(caller, agent, segment)
    except InvalidArgument as exc:
        raise _named(exc) from None
    return SegmentOut(segment=segment, entries=[EntryOut.of(e) for e in got])
