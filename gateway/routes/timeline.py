"""REST ``GET /v1/timeline`` (a node of the caller's table of contents and its children,
``AgentMemory.timeline``) and ``GET /v1/timeline/expand`` (a segment's raw entries,
``AgentMemory.expand``). Bad input is a 422 naming its field (``at``, ``level``,
``depth``, ``segment``); another agent's segment a 403 (refused by the caller's access,
and by Redis for its user)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from blackboard import InvalidArgument
from memory.response_bodies import EntryOut

from ..refusals import InvalidParameter
from .deps import CallerDep
from .responses import BODY_ERRORS

router = APIRouter(prefix="/v1", tags=["memory"])

FIELDS = ("at", "level", "depth", "segment")


def _named(exc: InvalidArgument) -> InvalidParameter:
    """The library's refusal as a 422 naming its field (its message starts with it)."""
    field = str(exc).split(":", 1)[0]
    return InvalidParameter(str(exc), field=field if field in FIELDS else None)


class SegmentOut(BaseModel):
    segment: str = Field(description="The segment's ref (<scope>#<id>).")
    entries: list[EntryOut] = Field(description="Its raw entries, in time order.")


# What the schema says of each parameter (the handler's own checks stay: a calendar's days,
# 2023-02-30, and a level without a time are rules a pattern cannot state).
_Y, _M, _D = r"[1-9][0-9]{3}", r"(0[1-9]|1[0-2])", r"(0[1-9]|[12][0-9]|3[01])"
AT_PATTERN = (rf"^({_Y}(-{_M}(-{_D})?)?|root|y{_Y}|m{_Y}-{_M}|[wd]{_Y}-{_M}-{_D}"
              rf"|s{_Y}-{_M}-{_D}\.[0-9]{{1,6}})$")
LEVEL_PATTERN = r"^(root|year|month|week|day|segment)$"
SEGMENT_PATTERN = rf"^([^#]+#)?s{_Y}-{_M}-{_D}\.[0-9]{{1,6}}$"


@router.get("/timeline", responses=BODY_ERRORS)
async def timeline(
    caller: CallerDep,
    at: Annotated[str | None, Query(max_length=40, pattern=AT_PATTERN, description=(
        "2023, 2023-05, 2023-05-08 or a node id (default: the root).")) ] = None,
    level: Annotated[str | None, Query(max_length=16, pattern=LEVEL_PATTERN, description=(
        "year, month, week or day holding `at`."))] = None,
    depth: Annotated[int, Query(ge=0, le=5, description="Levels of children.")] = 1,
    scope: Annotated[str | None, Query(max_length=200, description=(
        "One scope (default: every scope the caller reads)."))] = None,
) -> dict[str, Any]:
    """A node of the caller's table of contents (year, month, week, day, segment: span,
    count, top tags, keywords, actors, summary) with ``depth`` levels of children under
    ``nodes``."""
    try:
        tree = await caller.memory.timeline(level, at, depth, scope=scope)
    except InvalidArgument as exc:
        raise _named(exc) from None
    return tree.as_dict()


@router.get("/timeline/expand", response_model=SegmentOut, responses=BODY_ERRORS)
async def expand(
    caller: CallerDep,
    segment: Annotated[str, Query(min_length=1, max_length=260, pattern=SEGMENT_PATTERN,
                                  description=(
        "A segment's ref as `timeline` returns it: <scope>#s2023-05-08.0."))],
) -> SegmentOut:
    """The raw entries under a segment, with their ids."""
    try:
        got = await caller.memory.expand(segment)
    except InvalidArgument as exc:
        raise _named(exc) from None
    return SegmentOut(segment=segment, entries=[EntryOut.of(e) for e in got])
