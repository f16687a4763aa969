"""The dashboard: its page at ``/`` (static files under ``/ui``, shipped in the package, no
build step) and the read APIs its views need beyond ``/v1`` under ``/v1/dashboard``.

Every route resolves the request's caller and reads through its Redis user; the workers,
dead-letter and re-drive routes answer 403 to an agent token. Mounted by ``create_app``
(:data:`gateway.app.MOUNTS`) through :func:`mount`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.responses import FileResponse
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from memory import MemoryLevel
from memory.request_bodies import RecallRequest
from retrieval.query import instant_input, past_instant

from ..dash import beliefs as beliefs_mod
from ..dash import charts as charts_mod
from ..dash import entry as entry_mod
from ..dash import events as events_mod
from ..dash import ops, paging
from ..dash import recall as recall_mod
from ..dash import scopes as scopes_mod
from ..errors import GatewayError
from ..static_files import MemoryStaticFiles
from . import dash_timeline, dash_tools
from .deps import CallerDep
from .responses import BODY_ERRORS

__all__ = ["STATIC", "mount", "router"]

#: The page, its stylesheet and its scripts (package data).
STATIC = Path(__file__).resolve().parent.parent / "dashboard"

router = APIRouter(prefix="/v1/dashboard", tags=["dashboard"], responses=BODY_ERRORS)


class RedriveRequest(BaseModel):
    """``confirm`` must be true: the page asks the operator first, and a script must say so."""

    model_config = ConfigDict(extra="forbid")
    partition: int = Field(ge=0)
    id: str = Field(min_length=3, max_length=64, pattern=r"^\d+-\d+$")
    confirm: bool


class NotConfirmed(GatewayError):
    status, kind = 422, "not_confirmed"


@router.get("/me")
async def me(caller: CallerDep) -> dict[str, Any]:
    """Who the token is: agent, teams, operator."""
    return {"agent": caller.agent_id, "teams": list(caller.teams), "operator": caller.operator,
            "token": caller.token_id, "levels": [lvl.value for lvl in MemoryLevel]}


@router.get("/scopes/{scope}/entries")
async def scope_entries(caller: CallerDep, scope: str,
                        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
                        cursor: Annotated[str | None, Query(max_length=200)] = None,
                        q: Annotated[str | None, Query(max_length=200)] = None,
                        ) -> dict[str, Any]:
    """One readable scope's entries, newest first, a page at a time: ``next`` is the
    ``cursor`` of the following page (null: no more); ``q`` keeps those whose text, tags
    or key contain it (a filtered page looks at most at 2000 entries)."""
    return await paging.page(caller, scope, limit, cursor, q)


@router.get("/entries/{entry_id}")
async def entry(caller: CallerDep, entry_id: str, scope: str) -> dict[str, Any]:
    """An entry with its decay curve and provenance both ways."""
    return await entry_mod.entry_detail(caller, scope, entry_id)


class EntryRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    scope: str = Field(min_length=1, max_length=512)
    id: str = Field(min_length=1, max_length=128)


class TextsRequest(BaseModel):
    """The entries whose text the events view shows (at most 200 a call)."""

    model_config = ConfigDict(extra="forbid")
    refs: list[EntryRef] = Field(max_length=200)


@router.get("/events/recent")
async def recent_events(caller: CallerDep,
                        limit: Annotated[int, Query(ge=1, le=1000)] = 200) -> dict[str, Any]:
    """The newest events of every scope the caller may read (newest first), each with its
    entry's text while the entry lives: the events view's history before its live stream."""
    return {"events": await events_mod.recent_events(caller, limit)}


@router.post("/texts")
async def texts(caller: CallerDep, body: TextsRequest) -> dict[str, Any]:
    """The text of each live entry named (``{"refs": [{"scope", "id"}]}``)."""
    return {"texts": await events_mod.texts_of(caller, [(r.scope, r.id) for r in body.refs])}


@router.get("/edges")
async def edges(caller: CallerDep) -> dict[str, Any]:
    """The dataflow edges between the caller's scopes (for an agent, whose user cannot read
    the edge records: its default hierarchy), without buffer sizes."""
    return {"edges": await scopes_mod.bound_edges(caller)}


@router.get("/beliefs")
async def beliefs(
    caller: CallerDep,
    as_of: Annotated[datetime | None, Query(), BeforeValidator(instant_input),
                     AfterValidator(past_instant)] = None,
) -> dict[str, Any]:
    """Facts with evidence and supersession chains; procedures. ``as_of`` (ISO 8601, not in
    the future; naive means UTC): each fact's version as it stood then."""
    return await beliefs_mod.beliefs(caller, as_of)


@router.post("/recall")
async def recall(caller: CallerDep, request: Request, q: RecallRequest) -> dict[str, Any]:
    """Recall with every score component and the hard filters' exclusion counts."""
    return await recall_mod.explore(request.app, caller, q)


@router.get("/workers")
async def workers(caller: CallerDep) -> dict[str, Any]:
    """Operator: live workers, partitions (bus, groups' pending and lag), leases."""
    return await ops.workers_view(caller)


@router.get("/dlq")
async def dlq(caller: CallerDep, limit: Annotated[int, Query(ge=1, le=1000)] = 100,
              partition: Annotated[int | None, Query(ge=0)] = None) -> dict[str, Any]:
    """Operator: the newest dead letters with their reason."""
    return await ops.dlq(caller, limit, partition)


@router.post("/dlq/redrive")
async def redrive(caller: CallerDep, body: RedriveRequest) -> dict[str, Any]:
    """Operator: put a dead letter back on its bus (audited in ``bb:audit``)."""
    ops.require_operator(caller)
    if not body.confirm:
        raise NotConfirmed("re-drive needs \"confirm\": true", field="confirm")
    return await ops.redrive_one(caller, body.partition, body.id)


@router.get("/audit")
async def audit(caller: CallerDep,
                limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> dict[str, Any]:
    """Operator: the newest operator actions (re-drives)."""
    return await ops.audit(caller, limit)


async def index() -> FileResponse:
    # The page itself holds no data: every view fetches with the token the user gives.
    return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})


def mount(app: FastAPI) -> Any:
    """Add the dashboard to ``app``; -> the context that closes its retrievers."""
    app.state.dash_retrievers = OrderedDict()
    app.include_router(router)
    app.include_router(dash_tools.router)
    app.include_router(dash_timeline.router)
    app.add_api_route("/", index, include_in_schema=False)
    app.mount("/ui", MemoryStaticFiles(directory=STATIC), name="dashboard")

    @asynccontextmanager
    async def lifetime() -> AsyncIterator[None]:
        try:
            async with charts_mod.sampling(app, app.state.settings.chart_interval):
                yield
        finally:
            await recall_mod.close_retrievers(app)

    return lifetime()
