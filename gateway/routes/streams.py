"""``GET /v1/events``: Server-Sent Events of the caller's scopes' feeds.

Each event's ``id:`` is ``<scope>@<feed stream id>``; a client reconnecting with
``Last-Event-ID`` resumes after that stream id in every scope it watches. Stream ids are
the server's millisecond clock, so resumption is exact except for events of *other* scopes
written in the same millisecond as the last one received.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse

from blackboard import Event, EventType, InvalidArgument
from memory import ChangeHandle, TagMatch
from memory.subscriptions import pattern_matches
from memory.wire import EventOut

from ..caller import Caller
from ..operator import all_scopes
from .deps import CallerDep
from .responses import READ_ERRORS

router = APIRouter(prefix="/v1", tags=["events"], responses=READ_ERRORS)

#: Events queued for one slow client before its readers wait (back-pressure, bounded).
QUEUE = 1000
KEEPALIVE_S = 15.0


async def _scopes(caller: Caller, patterns: list[str] | None) -> list[str]:
    """Scopes matching the patterns (None: every readable one), each checked readable
    (403 names the first refused); an operator may watch any registered scope."""
    pool = await all_scopes(caller) if caller.operator else caller.memory.readable_scopes()
    if not patterns:
        return pool
    out: list[str] = []
    for p in patterns:
        got = [s for s in pool if pattern_matches(p, s)]
        if not got:
            if not caller.operator:
                caller.memory.access.check_read(p)  # AccessDenied naming the pattern
            raise InvalidArgument(f"no scope you may read matches {p!r}")
        out += [s for s in got if s not in out]
    return out


def _since(last_event_id: str | None) -> str | None:
    if not last_event_id:
        return None
    _, _, sid = last_event_id.rpartition("@")
    ms, _, seq = sid.partition("-")
    if not (ms.isdigit() and (seq == "" or seq.isdigit())):
        raise InvalidArgument(f"Last-Event-ID {last_event_id!r} is not <scope>@<stream id>")
    return sid


@router.get("/events")
async def events(
    request: Request, caller: CallerDep,
    scope: list[str] | None = Query(
        None, description="Scope ids or patterns (`*` within a segment); none: every "
                          "scope the caller may read."),
    types: list[EventType] | None = Query(None),
    tag: list[str] | None = Query(None, description="Events must carry all of these tags."),
    last_event_id: str | None = Header(None),
    since: str | None = Query(None, description="Like Last-Event-ID (for clients without it)."),
) -> StreamingResponse:
    scopes = await _scopes(caller, scope)
    start = _since(last_event_id or since)
    # Probe each feed on the caller's connection first: a scope Redis refuses this user
    # fails the request now (403, NOPERM) instead of a stream that never delivers.
    for s in scopes:
        await caller.bb.scope(s).last_event_id()
    queue: asyncio.Queue[Event] = asyncio.Queue(QUEUE)
    handle = ChangeHandle(caller.bb, scopes, queue.put, match=TagMatch.of(all_of=tag or ()),
                          types=set(types) if types else None, since=start, block_ms=1000)
    await handle.ready()

    async def body() -> AsyncIterator[bytes]:
        try:
            yield b": stream of " + ", ".join(scopes).encode() + b"\n\n"
            while not await request.is_disconnected():
                try:
                    ev = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
                except TimeoutError:
                    yield b": keepalive\n\n"
                    continue
                out = EventOut.of(ev)
                yield (f"id: {out.cursor}\nevent: {out.type}\n"
                       f"data: {json.dumps(out.model_dump())}\n\n").encode()
        finally:
            await handle.stop()

    return StreamingResponse(body(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
