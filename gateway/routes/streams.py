"""``GET /v1/events``: Server-Sent Events of the caller's scopes' feeds.

Each event's ``id:`` is ``<scope>@<feed stream id>``; a client reconnecting with
``Last-Event-ID`` resumes after that stream id in every scope it watches. Stream ids are
the server's millisecond clock, so resumption is exact except for events of *other* scopes
written in the same millisecond as the last one received.

A stream that cannot go on -- its token revoked (the re-login is refused), a feed damaged
by its owner's raw commands -- ends with one ``event: error`` whose data is the REST error
body, instead of a reader retrying behind it. Each Redis user may hold
``streams_per_user`` streams open at once (429 beyond): each holds a blocking connection
per partition it reads.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse

from blackboard import AccessDenied, Event, EventType, InvalidArgument
from memory import ChangeHandle, TagMatch
from memory.response_bodies import EventOut
from memory.subscriptions import pattern_matches

from ..caller import Caller
from ..errors import status_of
from ..operator import all_scopes
from ..refusals import InvalidParameter, TooManyRequests
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


async def _probe(caller: Caller, scopes: list[str]) -> None:
    """Probe the feeds on the caller's connection first: a scope Redis refuses this user
    fails the request now (403, NOPERM) instead of a stream that never delivers. All in
    one round trip; on a refusal, one scope at a time, so the 403 names the first refused
    scope as before."""
    try:
        await caller.bb.reads.newest_event_ids(scopes)
    except AccessDenied:
        for s in scopes:
            await caller.bb.scope(s).last_event_id()
        raise


#: A stream id is two unsigned 64-bit numbers (ms-seq): Redis refuses anything larger.
_U64 = 2**64 - 1


def _since(last_event_id: str | None, field: str) -> str | None:
    if not last_event_id:
        return None
    _, _, sid = last_event_id.rpartition("@")
    ms, _, seq = sid.partition("-")
    if not (ms.isdigit() and (seq == "" or seq.isdigit())
            and len(ms) <= 20 and len(seq) <= 20
            and int(ms) <= _U64 and int(seq or 0) <= _U64):
        raise InvalidParameter(
            f"{field}: Last-Event-ID {last_event_id[:80]!r} is not <scope>@<stream id> "
            "(<ms>-<seq>, each at most 2^64-1)", field=field)
    return sid


def _open_stream(request: Request, caller: Caller) -> None:
    """Count one more open stream of the caller's Redis user (429 over the cap)."""
    open_: dict[str, int] = request.app.state.__dict__.setdefault("streams_open", {})
    cap = request.app.state.settings.streams_per_user
    if open_.get(caller.principal, 0) >= cap:
        raise TooManyRequests(
            f"user {caller.principal} already has {cap} event streams open "
            "(BLACKBOARD_GATEWAY_STREAMS_PER_USER); close one first",
            headers={"Retry-After": "1"})
    open_[caller.principal] = open_.get(caller.principal, 0) + 1


def _close_stream(request: Request, caller: Caller) -> None:
    open_: dict[str, int] = request.app.state.streams_open
    n = open_.get(caller.principal, 1) - 1
    if n > 0:
        open_[caller.principal] = n
    else:
        open_.pop(caller.principal, None)


def _error_event(exc: BaseException) -> bytes:
    _, body, _ = status_of(exc)
    return f"event: error\ndata: {json.dumps(body.model_dump())}\n\n".encode()


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
    start = _since(last_event_id, "last-event-id") or _since(since, "since")
    await _probe(caller, scopes)
    _open_stream(request, caller)
    try:
        queue: asyncio.Queue[Event] = asyncio.Queue(QUEUE)
        handle = ChangeHandle(caller.bb, scopes, queue.put,
                              match=TagMatch.of(all_of=tag or ()),
                              types=set(types) if types else None, since=start,
                              block_ms=1000)
        await handle.ready()
    except BaseException:
        _close_stream(request, caller)
        raise

    async def next_event() -> Event | BaseException | None:
        """The next event; the handle's failure once it failed; None after a quiet
        keepalive interval."""
        if not queue.empty():
            return queue.get_nowait()
        if handle.failed.done():
            return handle.failed.result()
        get: asyncio.Future[Any] = asyncio.ensure_future(queue.get())
        failed: asyncio.Future[Any] = handle.failed
        try:
            await asyncio.wait({get, failed}, timeout=KEEPALIVE_S,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not get.done():
                get.cancel()
        if get.done() and not get.cancelled():
            return get.result()
        return handle.failed.result() if handle.failed.done() else None

    async def body() -> AsyncIterator[bytes]:
        try:
            yield b": stream of " + ", ".join(scopes).encode() + b"\n\n"
            while not await request.is_disconnected():
                got = await next_event()
                if got is None:
                    yield b": keepalive\n\n"
                    continue
                if isinstance(got, BaseException):
                    yield _error_event(got)
                    return
                out = EventOut.of(got)
                yield (f"id: {out.cursor}\nevent: {out.type}\n"
                       f"data: {json.dumps(out.model_dump())}\n\n").encode()
        finally:
            _close_stream(request, caller)
            await handle.stop()

    return StreamingResponse(body(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
