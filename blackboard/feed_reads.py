"""The feed side of the substrate's reads: where scopes' feeds stand and their events.

:class:`FeedReads` is the feed half of :class:`~blackboard.reads.Reads` (``bb.reads``),
kept here so each module holds one noun: :meth:`~FeedReads.newest_ids`,
:meth:`~FeedReads.newest_event_ids`, :meth:`~FeedReads.heads`, :meth:`~FeedReads.ranges`,
and the blocking :meth:`~FeedReads.events` (and :meth:`~FeedReads.events_or_pause`, for a
reader that must outlive a dropped connection). Several feeds can be read in one XREAD
only when they share a hash slot, i.e. one partition; callers (observers, index
followers, ``Scope.feed``) group by partition.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .backoff import Backoff
from .codec import as_str
from .entry import Event, ScopePolicy, decode_event
from .errors import AccessDenied, BlackboardError, InvalidArgument
from .scripts import raise_for_script_error, run_script

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["FeedHead", "FeedReads", "heads_reply"]

log = logging.getLogger(__name__)

#: Seconds during which the same failure of the same kind of reader is logged once: the
#: readers of one connection (one per partition) fail together, and say it once.
_QUIET_S = 60.0
_logged: dict[tuple[str, str, str], float] = {}


def _first_in_a_while(reader: str, exc: BaseException) -> bool:
    now = time.monotonic()
    key = (reader, type(exc).__name__, str(exc)[:200])
    if now - _logged.get(key, -_QUIET_S) < _QUIET_S:
        return False
    if len(_logged) > 1000:  # bounded: forget the oldest half
        for k in sorted(_logged, key=_logged.__getitem__)[:500]:
            del _logged[k]
    _logged[key] = now
    return True


@dataclass(frozen=True, slots=True)
class FeedHead:
    """Where a scope's feed stands and what an index of it needs to start.

    ``newest``: id of the newest retained event (``0-0`` when empty). ``kept``: whether the
    event asked about is still retained (False when none was asked). ``ids``: entry ids in
    creation order (only when asked for). ``policy``: the enforced limits (cfg hash).
    """

    scope: str
    newest: str
    kept: bool
    ids: tuple[str, ...]
    policy: ScopePolicy


def heads_reply(names: Sequence[str], reply: Sequence[bytes | str]) -> dict[str, str]:
    """Each of ``names`` (the feeds asked about, or their scopes, in order) -> the newest
    id in a ``heads.lua`` reply."""
    return {n: as_str(i) for n, i in zip(names, reply, strict=True)}


class FeedReads:
    """The reads of scopes' feeds (``bb.reads``, through :class:`~blackboard.reads.Reads`)."""

    bb: Blackboard

    async def newest_ids(self, streams: Sequence[str]) -> dict[str, str]:
        """Stream key (a feed, a bus) -> id of its newest event (``0-0`` when empty), in
        one round trip: one ``heads.lua`` call (on a cluster, whose feeds span slots, or
        for a user who may not load the script after a flush, one XREVRANGE per feed)."""
        if not streams:
            return {}
        if not self.bb.cluster:
            try:
                reply = await run_script(self.bb.client, "heads", list(streams), [],
                                         readonly=True)
            except AccessDenied as exc:
                if exc.redis_message is not None:  # refused inside the script
                    raise_for_script_error(exc)
                # else not loaded, and this user may not load it: ask without it, below
            except BlackboardError as exc:
                raise_for_script_error(exc)
                raise
            else:
                return heads_reply(streams, reply)
        async with self.bb.client.pipeline(transaction=False) as pipe:
            for f in streams:
                pipe.xrevrange(f, count=1)
            lasts = await pipe.execute()
        return {f: (last[0][0].decode() if last else "0-0")
                for f, last in zip(streams, lasts, strict=True)}

    async def newest_event_ids(self, scope_ids: Sequence[str]) -> dict[str, str]:
        """Scope -> id of the newest event of its feed (``0-0`` when empty), one round
        trip."""
        feeds = {self.bb.scope(s).keys.feed: s for s in scope_ids}
        got = await self.newest_ids(list(feeds))
        return {s: got[f] for f, s in feeds.items()}

    async def heads(
        self,
        scope_ids: Sequence[str],
        *,
        at: Mapping[str, str] | None = None,
        with_ids: bool = False,
    ) -> list[FeedHead]:
        """Each scope's :class:`FeedHead`, in order, in one round trip. ``at`` (scope ->
        feed id) asks whether that event is still retained; ``with_ids`` lists every
        indexed entry id (O(entries): for a bootstrap)."""
        at = at or {}
        async with self.bb.client.pipeline(transaction=False) as pipe:
            for s in scope_ids:
                k = self.bb.scope(s).keys
                pipe.xrevrange(k.feed, count=1)
                if s in at:
                    pipe.xrange(k.feed, at[s], at[s], count=1)
                if with_ids:
                    pipe.zrange(k.ix, 0, -1)
                pipe.hgetall(k.cfg)
            got = iter(await pipe.execute())
        out: list[FeedHead] = []
        for s in scope_ids:
            newest = next(got)
            kept = bool(next(got)) if s in at else False
            ids = tuple(as_str(i) for i in next(got)) if with_ids else ()
            out.append(FeedHead(s, as_str(newest[0][0]) if newest else "0-0", kept, ids,
                                ScopePolicy.from_redis(next(got))))
        return out

    async def ranges(
        self, ranges: Mapping[str, tuple[str, str]], *, count: int
    ) -> dict[str, list[Event]]:
        """Retained events of several scopes (scope -> (after, until): after excluded,
        until included), at most ``count`` each, oldest first; one round trip, no
        blocking."""
        scopes = [self.bb.scope(s) for s in ranges]
        async with self.bb.client.pipeline(transaction=False) as pipe:
            for sc in scopes:
                after, until = ranges[sc.id]
                pipe.xrange(sc.keys.feed, f"({after}", until, count=count)
            replies = await pipe.execute() if scopes else []
        return {sc.id: [decode_event(sid, f, sc.partition) for sid, f in items]
                for sc, items in zip(scopes, replies, strict=True)}

    async def events(
        self, positions: Mapping[str, str], partition: int, *, count: int, block_ms: int
    ) -> list[tuple[str, Event]]:
        """Events after ``positions`` (scope -> last feed id seen) of scopes of
        ``partition``, as (scope, event) in stream order per scope; waits up to
        ``block_ms`` for the first. InvalidArgument for a scope of another partition (one
        XREAD must stay in one hash slot)."""
        feeds: dict[str, str] = {}
        for s in positions:
            sc = self.bb.scope(s)
            if sc.partition != partition:
                raise InvalidArgument(f"scope {s!r} is not in partition {partition}")
            feeds[sc.keys.feed] = s
        # A blocking read holds its connection for the whole block: it brings its own, so
        # that many followers and observers in one process (one per agent) cannot starve
        # the pool.
        self.bb.reserve_connections(1)
        try:
            reply = await self.bb.client.xread(
                {f: positions[s] for f, s in feeds.items()}, count=count, block=block_ms
            )
        finally:
            self.bb.reserve_connections(-1)
        out: list[tuple[str, Event]] = []
        for stream, items in reply or ():
            s = feeds[as_str(stream)]
            out += [(s, decode_event(sid, fields, partition)) for sid, fields in items]
        return out

    async def events_or_pause(
        self,
        positions: Mapping[str, str],
        partition: int,
        *,
        count: int,
        block_ms: int,
        stopped: Callable[[], bool],
        reader: str,
        backoff: Backoff | None = None,
        fatal: Callable[[BaseException], bool] | None = None,
    ) -> list[tuple[str, Event]]:
        """:meth:`events` for a reader that runs until ``stopped()``: a failed read (a
        dropped connection) must not end it, so it is answered, after a wait, with no
        events; the caller's loop reads again. The wait grows with each failure in a row
        (``backoff``, one per reader; without one, half a second), and only the first of
        a streak is logged. A failure ``fatal`` says no retry can mend (a refused login,
        a damaged feed) is raised instead, for the reader to end on."""
        try:
            got = await self.events(positions, partition, count=count, block_ms=block_ms)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if stopped():
                return []
            if fatal is not None and fatal(exc):
                raise
            delay = backoff.next_delay() if backoff is not None else 0.5
            if (backoff is None or backoff.first_failure) and _first_in_a_while(reader, exc):
                log.warning("%s of partition %d failed; retrying (backing off up to %g s)",
                            reader, partition, backoff.cap if backoff else 0.5, exc_info=exc)
            await asyncio.sleep(delay)
            return []
        if backoff is not None:
            backoff.reset()
        return got
