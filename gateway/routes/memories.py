"""REST ``/v1``: store, get, update, forget, recall, tags, map, stats, facts, procedures,
conversation messages. Every call runs on the caller's own Redis connection."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from pydantic import BaseModel

from blackboard import Entry, WriteRequest
from blackboard.batch_write import write_batch
from memory import MemoryLevel
from memory.levels import unknown_level
from memory.request_bodies import (
    ENTRY_ID_SCHEMA,
    LEVEL_SCHEMA,
    SCOPE_SCHEMA,
    TAG_SCHEMA,
    BatchStore,
    MessagesIn,
    RecallRequest,
    StoreRequest,
    UpdateRequest,
)
from memory.response_bodies import (
    BatchOut,
    EntryOut,
    MapOut,
    MessagesOut,
    RecallResponse,
    StatsOut,
    TagsOut,
)

from ..caller import Caller
from ..maps import caller_map
from ..operator import operator_stats
from ..refusals import InvalidParameter
from .deps import CallerDep
from .json_route import json_post, json_route
from .params import NameQuery
from .responses import BODY_ERRORS, READ_ERRORS

router = APIRouter(prefix="/v1", tags=["memory"])

#: Documented in the OpenAPI schema: every failure has the one error body.
_ERRORS = BODY_ERRORS
_READ = READ_ERRORS


#: Parameters, with what the schema says of them (the library still validates them).
EntryIdPath = Annotated[str, Path(json_schema_extra=ENTRY_ID_SCHEMA)]
ScopeQuery = Annotated[str | None, Query(json_schema_extra=SCOPE_SCHEMA)]
LevelQuery = Annotated[str | None, Query(json_schema_extra=LEVEL_SCHEMA)]
SessionPath = Annotated[str, Path(json_schema_extra={
    "pattern": TAG_SCHEMA["pattern"].replace("{1,128}", "{1,120}")})]


def _level(v: str | None) -> MemoryLevel | None:
    if v is None:
        return None
    got = MemoryLevel.named(v)
    if got is None:
        raise InvalidParameter(f"level: {unknown_level(v[:80])}", field="level")
    return got


@json_post(router, "/memories", status_code=201, response_model=EntryOut, responses=_ERRORS)
async def store(body: StoreRequest, caller: CallerDep) -> EntryOut:
    e = await caller.memory.store(
        body.value, _level(body.level), tags=body.tags, metadata=body.metadata,
        importance=body.importance, key=body.key, ttl=body.ttl, team=body.team)
    return EntryOut.of(e)


@json_post(router, "/memories/batch", status_code=201, response_model=BatchOut,
           responses=_ERRORS)
async def store_batch(body: BatchStore, caller: CallerDep) -> BatchOut:
    """Every item is checked (access, tags, size...) before any is sent, so a refused
    batch writes nothing; the whole batch is then one transaction: a gateway killed
    mid-batch leaves none of it (blackboard.batch_write)."""
    mem = caller.memory
    groups: dict[str, list[tuple[int, WriteRequest]]] = {}
    for i, it in enumerate(body.items):
        sid = mem.access.check_write(mem.scope_for(_level(it.level), it.team))
        req = WriteRequest(it.value, tags=it.tags, metadata=it.metadata, key=it.key,
                           ttl=it.ttl, importance=it.importance, author=mem.agent_id)
        groups.setdefault(sid, []).append((i, req))
    written = await write_batch(
        caller.bb, [(sid, [r for _, r in reqs]) for sid, reqs in groups.items()])
    out: list[Entry | None] = [None] * len(body.items)
    for reqs, entries in zip(groups.values(), written, strict=True):
        for (i, _), e in zip(reqs, entries, strict=True):
            out[i] = e
    return BatchOut(entries=[EntryOut.of(e) for e in out if e is not None])


async def _find(caller: Caller, entry_id: str, scope: str | None) -> Entry:
    if scope is not None:
        return await caller.bb.scope(caller.memory.access.check_read(scope)).get(entry_id)
    sid = await caller.memory.locate(entry_id)
    return await caller.bb.scope(sid).get(entry_id)


@router.get("/memories/{entry_id}", response_model=EntryOut, responses=_READ)
async def get(entry_id: EntryIdPath, caller: CallerDep, scope: ScopeQuery = None) -> EntryOut:
    """One entry: by ``scope`` (any readable one), else searched in the writable scopes."""
    return EntryOut.of(await _find(caller, entry_id, scope))


@json_route(router, "/memories/{entry_id}", methods=("PATCH",), response_model=EntryOut,
            responses=_ERRORS)
async def update(entry_id: EntryIdPath, body: UpdateRequest, caller: CallerDep) -> EntryOut:
    sid = await caller.memory.locate(entry_id, body.scope)
    given = body.model_fields_set - {"scope", "expected_version"}
    changes: dict[str, Any] = {k: getattr(body, k) for k in given}
    if "value" in changes and changes["value"] is None:
        changes.pop("value")
    e = await caller.bb.scope(sid).update(entry_id, expected_version=body.expected_version,
                                          **changes)
    return EntryOut.of(e)


@router.delete("/memories/{entry_id}", status_code=204, responses=_READ)
async def forget(entry_id: EntryIdPath, caller: CallerDep, scope: ScopeQuery = None) -> Response:
    await caller.memory.forget(entry_id, scope=scope)
    return Response(status_code=204)


_RECALL = {**_ERRORS, 200: {"headers": {"Server-Timing": {
    "description": "recall;dur=<ms>: how long the recall itself took in the gateway",
    "schema": {"type": "string"}}}}}


@json_post(router, "/recall", response_model=RecallResponse, responses=_RECALL)
async def recall(body: RecallRequest, caller: CallerDep) -> Response:
    """Hybrid recall with the full query model; each hit carries every score component.
    ``Server-Timing: recall;dur=<ms>`` says how long the recall itself took (W3C Server
    Timing): the rest of the caller's wait is the gateway's and the network's."""
    t0 = time.perf_counter()
    hits = await caller.memory.recall(body, explain=body.explain)
    took_ms = (time.perf_counter() - t0) * 1e3
    scopes = caller.memory.recall_scopes(body.scopes, body.levels) if body.explain else None
    # Rendered without building the models (RecallResponse.json_of, the same bytes): the
    # schema stays response_model's; FastAPI would also validate the models again.
    return Response(RecallResponse.json_of(hits, scopes), media_type="application/json",
                    headers={"Server-Timing": f"recall;dur={took_ms:.3f}"})


@router.get("/tags", response_model=TagsOut, responses=_READ)
async def tags(caller: CallerDep, level: LevelQuery = None,
               team: NameQuery = None) -> TagsOut:
    return TagsOut(tags=await caller.memory.list_tags(_level(level), team=team))


@router.get("/map", response_model=MapOut, responses=_READ)
async def memory_map(caller: CallerDep, request: Request) -> MapOut:
    """The caller's scopes and the dataflow edges out of them; an operator's: every
    registered scope."""
    return await caller_map(caller, request.app.state.service)


@router.get("/stats", response_model=StatsOut, responses=_READ)
async def stats(caller: CallerDep) -> StatsOut:
    if caller.operator:
        return StatsOut(scopes=await operator_stats(caller))
    return StatsOut(scopes={k: v.to_json() for k, v in (await caller.memory.stats()).items()})


class EntriesOut(BaseModel):
    entries: list[EntryOut]


async def _level_entries(caller: Caller, level: MemoryLevel, limit: int) -> EntriesOut:
    """Live entries of the level's readable scopes (the agent's, its teams'), newest
    first, superseded beliefs left out; each carries its evidence in ``metadata`` and
    its provenance in ``source``."""
    out: list[Entry] = []
    for s in caller.memory.recall_scopes(None, [level.value]):
        out += await caller.bb.scope(s).entries(limit=limit)
    live = sorted((e for e in out if not e.superseded_by), key=lambda e: -e.created_at)
    return EntriesOut(entries=[EntryOut.of(e) for e in live[:limit]])


@router.get("/facts", response_model=EntriesOut, responses=_READ)
async def facts(caller: CallerDep, limit: int = Query(100, ge=1, le=1000)) -> EntriesOut:
    """Learned semantic facts (beliefs) with their evidence."""
    return await _level_entries(caller, MemoryLevel.SEMANTIC, limit)


@router.get("/procedures", response_model=EntriesOut, responses=_READ)
async def procedures(caller: CallerDep, limit: int = Query(100, ge=1, le=1000)) -> EntriesOut:
    """Learned procedures with their steps, support and success rate."""
    return await _level_entries(caller, MemoryLevel.PROCEDURAL, limit)


@json_post(router, "/sessions/{session}/messages", status_code=201,
           response_model=MessagesOut, responses=_ERRORS)
async def add_messages(session: SessionPath, body: MessagesIn, caller: CallerDep) -> MessagesOut:
    got = await caller.memory.add_messages(session, [m.to_message() for m in body.messages],
                                           _level(body.level), team=body.team)
    return MessagesOut(entries=[EntryOut.of(e) for e in got])
