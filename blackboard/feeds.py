"""Reading scope feeds: the newest ids, and blocking reads of several feeds at once.

Several feeds can be read in one XREAD only when they share a hash slot, i.e. one
partition; callers (observers, index followers, ``Scope.feed``) group by partition.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from .codec import as_str
from .entry import Event, decode_event
from .errors import AccessDenied, BlackboardError, InvalidArgument
from .scripts import raise_for_script_error, run_script

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = [
    "heads_reply",
    "newest_event_ids",
    "newest_ids",
    "read_feeds",
    "read_ranges",
    "read_scopes",
    "read_scopes_or_pause",
]

log = logging.getLogger(__name__)


async def newest_ids(bb: Blackboard, feeds: Sequence[str]) -> dict[str, str]:
    """Feed key -> id of its newest event (``0-0`` when empty), in one round trip: one
    ``heads.lua`` call (on a cluster, whose feeds span slots, or for a user who may not
    load the script after a flush, one XREVRANGE per feed)."""
    if not feeds:
        return {}
    if not bb.cluster:
        try:
            reply = await run_script(bb.client, "heads", list(feeds), [], readonly=True)
        except AccessDenied as exc:
            if exc.redis_message is not None:  # refused inside the script
                raise_for_script_error(exc)
            # else not loaded, and this user may not load it: ask without it, below
        except BlackboardError as exc:
            raise_for_script_error(exc)
            raise
        else:
            return heads_reply(feeds, reply)
    async with bb.client.pipeline(transaction=False) as pipe:
        for f in feeds:
            pipe.xrevrange(f, count=1)
        lasts = await pipe.execute()
    return {
        f: (last[0][0].decode() if last else "0-0") for f, last in zip(feeds, lasts, strict=True)
    }


def heads_reply(names: Sequence[str], reply: Sequence[bytes | str]) -> dict[str, str]:
    """Each of ``names`` (the feeds asked about, or their scopes, in order) -> the newest
    id in a ``heads.lua`` reply."""
    return {n: as_str(i) for n, i in zip(names, reply, strict=True)}


async def newest_event_ids(bb: Blackboard, scope_ids: Sequence[str]) -> dict[str, str]:
    """Scope -> id of the newest event of its feed (``0-0`` when empty), in one round trip."""
    feeds = {bb.scope(s).keys.feed: s for s in scope_ids}
    got = await newest_ids(bb, list(feeds))
    return {s: got[f] for f, s in feeds.items()}


async def read_scopes(
    bb: Blackboard, positions: Mapping[str, str], partition: int, *, count: int, block_ms: int
) -> list[tuple[str, Event]]:
    """:func:`read_feeds` by scope: events after ``positions`` (scope -> last feed id seen)
    of scopes of ``partition``, as (scope, event); InvalidArgument for a scope of another
    partition (one XREAD must stay in one hash slot)."""
    feeds: dict[str, str] = {}
    for s in positions:
        sc = bb.scope(s)
        if sc.partition != partition:
            raise InvalidArgument(f"scope {s!r} is not in partition {partition}")
        feeds[sc.keys.feed] = s
    got = await read_feeds(bb, {f: positions[s] for f, s in feeds.items()}, partition,
                           count=count, block_ms=block_ms)
    return [(feeds[f], ev) for f, ev in got]


async def read_scopes_or_pause(
    bb: Blackboard,
    positions: Mapping[str, str],
    partition: int,
    *,
    count: int,
    block_ms: int,
    stopped: Callable[[], bool],
    reader: str,
) -> list[tuple[str, Event]]:
    """:func:`read_scopes` for a reader that runs until ``stopped()``: a failed read (a
    dropped connection) must not end it, so it is logged (unless stopping) and answered,
    after half a second, with no events; the caller's loop reads again."""
    try:
        return await read_scopes(bb, positions, partition, count=count, block_ms=block_ms)
    except asyncio.CancelledError:
        raise
    except Exception:
        if stopped():
            return []
        log.exception("%s of partition %d failed; retrying", reader, partition)
        await asyncio.sleep(0.5)
        return []


async def read_feeds(
    bb: Blackboard, positions: Mapping[str, str], partition: int, *, count: int, block_ms: int
) -> list[tuple[str, Event]]:
    """Events after ``positions`` (feed key -> last id seen) of feeds of one partition, as
    (feed key, event) in stream order per feed; waits up to ``block_ms`` for the first."""
    # A blocking read holds its connection for the whole block: it brings its own, so that
    # many followers and observers in one process (one per agent) cannot starve the pool.
    bb.reserve_connections(1)
    try:
        reply = await bb.client.xread(dict(positions), count=count, block=block_ms)
    finally:
        bb.reserve_connections(-1)
    out: list[tuple[str, Event]] = []
    for stream, items in reply or ():
        key = as_str(stream)
        out += [(key, decode_event(sid, fields, partition)) for sid, fields in items]
    return out


async def read_ranges(
    bb: Blackboard, ranges: Mapping[str, tuple[str, str]], *, count: int
) -> dict[str, list[Event]]:
    """Retained events of several scopes (scope -> (after, until): after excluded, until
    included), at most ``count`` each, oldest first; one round trip, no blocking."""
    scopes = [bb.scope(s) for s in ranges]
    async with bb.client.pipeline(transaction=False) as pipe:
        for sc in scopes:
            after, until = ranges[sc.id]
            pipe.xrange(sc.keys.feed, f"({after}", until, count=count)
        replies = await pipe.execute() if scopes else []
    return {sc.id: [decode_event(sid, f, sc.partition) for sid, f in items]
            for sc, items in zip(scopes, replies, strict=True)}
