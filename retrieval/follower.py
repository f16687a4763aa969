"""The index follower: keeps a :class:`SearchEngine` in sync with a set of scopes in Redis.

Redis is the source of truth and the engine a cache of it. A scope is bootstrapped (its
newest feed id read first, then its entries paged in, so no event is lost between the
two), or loaded from a current snapshot; then its feed is followed. One reader task per
partition: the feeds of a partition share a hash slot, so one ``XREAD`` blocks on all of
them (as :mod:`memory.observers` does), also on Redis Cluster.

Applying events is state based: an entry touched by ``written``/``updated``/``reinforced``
is re-read and upserted (gone: removed); ``deleted``/``expired``/``evicted`` remove it.
Re-reading under one lock makes replays and overlaps (reader and catch-up) harmless.

Embeddings are computed once and stored back in Redis: see :mod:`retrieval.embedding_queue`.

Read-your-writes: given each scope's newest feed id (:meth:`IndexFollower.sync` asks
``bb.reads.newest_event_ids``; a recall asks the blackboard's feed probe around its search),
:meth:`IndexFollower.catch_up_to` pulls the gap itself (``XRANGE``), bounded by a timeout.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from blackboard import Blackboard, Entry, Event, EventType
from blackboard.backoff import Backoff
from blackboard.tasks import cancel_and_wait

from .embedding_queue import EmbeddingQueue
from .engine import SearchEngine
from .snapshot import Snapshot, load_snapshot, save_snapshot

__all__ = ["FollowerStats", "IndexFollower", "feed_id_gt"]

log = logging.getLogger(__name__)

_REMOVALS = frozenset({EventType.DELETED, EventType.EXPIRED, EventType.EVICTED})


def _sid(s: str) -> tuple[int, int]:
    a, _, b = s.partition("-")
    return int(a), int(b or 0)


def feed_id_gt(a: str, b: str) -> bool:
    """Whether stream id ``a`` is after ``b``."""
    return _sid(a) > _sid(b)


@dataclass(frozen=True, slots=True)
class FollowerStats:
    """Counters: ``events`` applied, ``bootstrapped`` entries read in bulk,
    ``from_snapshot`` entries loaded from disk, ``stored_embeddings`` vectors written back,
    ``sync_timeouts`` queries that searched before catching up, ``adopted_embeddings``
    vectors another process (the index role) stored that were taken instead of computed,
    ``deferred_rounds`` times the background embedding waited for a live index worker,
    ``computed_embeddings`` entries' vectors computed here (in the background or by a
    search)."""

    scopes: int
    events: int
    bootstrapped: int
    from_snapshot: int
    stored_embeddings: int
    sync_timeouts: int
    adopted_embeddings: int = 0
    deferred_rounds: int = 0
    computed_embeddings: int = 0


class IndexFollower:
    """Follows scopes into ``engine``. ``await follow(scopes)`` adds scopes (idempotent);
    ``await sync(scopes)`` catches up to the writes acknowledged so far; ``await aclose()``
    stops the readers (and saves a snapshot when ``snapshot_dir`` is set).

    ``write_back``: store computed vectors in Redis (off for a read-only ACL user).
    ``background_embed``: embed the entries that lack a vector in a thread as they arrive
    (off for a one-shot process, which would only wait for it to exit: its searches embed
    what they need, within the engine's ``inline_embed``).
    """

    def __init__(
        self,
        bb: Blackboard,
        engine: SearchEngine,
        *,
        snapshot_dir: str | Path | None = None,
        block_ms: int = 1000,
        page: int = 256,
        write_back: bool = True,
        background_embed: bool = True,
    ) -> None:
        self.bb, self.engine = bb, engine
        self.snapshot_dir = Path(snapshot_dir) if snapshot_dir is not None else None
        self.block_ms, self.page = block_ms, page
        self._applied: dict[str, str] = {}
        self._by_part: dict[int, set[str]] = defaultdict(set)
        self._readers: dict[int, asyncio.Task[None]] = {}
        self._lock = asyncio.Lock()
        self._stopped = False
        self._snapshot: Snapshot | None = None
        self._snapshot_read = False
        self._loop = asyncio.get_running_loop()
        self._n = {"events": 0, "bootstrapped": 0, "from_snapshot": 0, "timeouts": 0}
        self._embeddings = EmbeddingQueue(bb, engine, write_back=write_back,
                                          background=background_embed)

    # -- public ---------------------------------------------------------------------------

    @property
    def write_back(self) -> bool:
        return self._embeddings.write_back

    @write_back.setter
    def write_back(self, on: bool) -> None:
        self._embeddings.write_back = on

    def scopes(self) -> list[str]:
        return sorted(self._applied)

    def applied(self, scope: str) -> str | None:
        """The last feed id applied for ``scope`` (None: not followed)."""
        return self._applied.get(scope)

    def stats(self) -> FollowerStats:
        n = self._n
        return FollowerStats(
            len(self._applied),
            n["events"],
            n["bootstrapped"],
            n["from_snapshot"],
            self._embeddings.stored,
            n["timeouts"],
            self._embeddings.adopted,
            self._embeddings.deferred,
            self._embeddings.computed,
        )

    async def follow(self, scopes: Iterable[str]) -> None:
        """Index ``scopes`` from now on (a no-op for scopes already followed)."""
        new = sorted({s for s in scopes if s not in self._applied})
        if not new or self._stopped:
            return
        async with self._lock:
            new = [s for s in new if s not in self._applied]
            if not new:
                return
            loaded = await self._from_snapshot(new)
            await self._bootstrap([s for s in new if s not in loaded])
            for s in new:
                self._by_part[self.bb.scope(s).partition].add(s)
        if loaded:  # replay what was written since the snapshot
            await self._catch_up(await self._newest(sorted(loaded)))
        for p in {self.bb.scope(s).partition for s in new}:
            if p not in self._readers:
                self._readers[p] = self._loop.create_task(self._read(p))
        if self._embeddings.background:  # off: a one-shot recall loads no model for a backlog
            self._embeddings.wake()

    async def sync(self, scopes: Sequence[str], wait_s: float = 2.0) -> bool:
        """Wait (at most ``wait_s`` seconds) until every write acknowledged in ``scopes`` before
        this call is applied; False (and a log line) when the time ran out."""
        await self.follow(scopes)
        return await self.catch_up_to(await self._newest(scopes), wait_s)

    async def settled(self, max_batch: int | None = None) -> None:
        """Wait for the batch being embedded in the background, if any and (``max_batch``)
        no larger than that: a search right after then finds every entry with its vector
        without embedding any itself (:meth:`EmbeddingQueue.settled`)."""
        await self._embeddings.settled(max_batch)

    async def adopt_stored(self, scopes: Sequence[str]) -> int:
        """Give the entries of ``scopes`` still waiting for a vector those stored meanwhile
        (by the index role): a search then embeds only the others itself. One round trip
        when some wait, for as many as a search embeds (``inline_embed``: a larger backlog
        is the background's); -> how many were adopted."""
        return await self._embeddings.adopt(set(scopes), self.engine.inline_embed)

    def wake_embedder(self) -> None:
        """Have the background embedder go on with what is queued (a no-op when busy),
        without waiting for an index worker: a semantic wait wants every vector now."""
        self._embeddings.hurry()

    def positions(self, scopes: Sequence[str]) -> dict[str, str]:
        """The last feed id applied for each of ``scopes`` (``0-0``: none), now."""
        return {s: self._applied.get(s, "0-0") for s in scopes}

    @staticmethod
    def behind(newest: dict[str, str], seen: dict[str, str]) -> dict[str, str]:
        """The scopes whose ``newest`` id is after the ``seen`` one, with that id."""
        if newest.items() <= seen.items():  # nothing written since: no id to parse
            return {}
        return {s: t for s, t in newest.items() if feed_id_gt(t, seen.get(s, "0-0"))}

    async def catch_up_to(self, newest: dict[str, str], wait_s: float = 2.0) -> bool:
        """Apply every scope's events up to its ``newest`` id, waiting at most ``wait_s``;
        False (and a log line) when the time ran out."""
        behind = self.behind(newest, self._applied)
        if not behind:
            return True
        # Shielded: a timed-out wait leaves the catch-up running, never half applied.
        task = self._loop.create_task(self._catch_up(behind))
        try:
            await asyncio.wait_for(asyncio.shield(task), wait_s)
            return True
        except TimeoutError:
            self._n["timeouts"] += 1
            log.warning(
                "index of %d scope(s) not caught up after %.2f s; searching anyway",
                len(behind),
                wait_s,
            )
            return False

    async def save_snapshot(self) -> Path | None:
        """Write a snapshot of every followed scope; its path (None: no ``snapshot_dir``)."""
        if self.snapshot_dir is None:
            return None
        async with self._lock:
            applied = dict(self._applied)
            data = {s: self.engine.export_scope(s) for s in applied}
        emb = self.engine.embedder
        await asyncio.to_thread(
            save_snapshot,
            self.snapshot_dir,
            applied,
            data,
            emb.name if emb else None,
            emb.dim if emb else 0,
        )
        return self.snapshot_dir

    async def aclose(self, *, snapshot: bool = True) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._embeddings.stop()
        # A reader still connecting when cancelled can swallow the cancellation (Python
        # 3.11's wait_for in redis-py's health check) and block a whole read: asked again.
        await cancel_and_wait(self._readers.values(), every_s=0.05)
        await self._embeddings.aclose()
        if snapshot and self.snapshot_dir is not None:
            await self.save_snapshot()
        self._embeddings.detach()

    # -- loading --------------------------------------------------------------------------

    async def _newest(self, scopes: Sequence[str]) -> dict[str, str]:
        return await self.bb.reads.newest_event_ids(scopes)

    async def _from_snapshot(self, scopes: list[str]) -> set[str]:
        """Load the scopes a current snapshot holds: its feed id for them is still in the
        feed (or is the newest), so the gap can be replayed. Returns those scopes."""
        if self.snapshot_dir is None:
            return set()
        if not self._snapshot_read:
            self._snapshot_read = True
            self._snapshot = await asyncio.to_thread(load_snapshot, self.snapshot_dir)
        snap = self._snapshot
        if snap is None:
            return set()
        wanted = [s for s in scopes if s in snap.manifest.scopes]
        if not wanted:
            return set()
        heads = await self.bb.reads.heads(wanted, at=snap.manifest.scopes)
        loaded: set[str] = set()
        emb = self.engine.embedder
        for head in heads:
            s, at = head.scope, snap.manifest.scopes[head.scope]
            if not head.kept and head.newest != at:
                continue  # trimmed past our position (or reset): bootstrap from Redis
            entries = snap.entries.get(s, [])
            if emb is None or snap.manifest.embedder != emb.name:
                entries = [replace(e, embedding=None, embedder=None) for e in entries]
            self.engine.set_policy(s, head.policy)
            self.engine.add(entries, embed_now=False)
            self._applied[s] = at
            self._n["from_snapshot"] += len(entries)
            loaded.add(s)
        return loaded

    async def _bootstrap(self, scopes: list[str]) -> None:
        """Read the scopes from Redis: newest feed ids first, then every entry."""
        if not scopes:
            return
        for head in await self.bb.reads.heads(scopes, with_ids=True):
            s = head.scope
            self.engine.set_policy(s, head.policy)
            scope = self.bb.scope(s)
            for j in range(0, len(head.ids), self.page):
                batch = [e for e in await scope.get_many(head.ids[j : j + self.page]) if e]
                self._embeddings.add(batch)
                self._n["bootstrapped"] += len(batch)
            self._applied[s] = head.newest

    # -- applying events ------------------------------------------------------------------

    async def _apply(self, events: list[Event]) -> None:
        """Apply feed events (caller holds the lock); skips those already applied."""
        fresh = [
            ev
            for ev in events
            if ev.scope in self._applied and feed_id_gt(ev.id, self._applied[ev.scope])
        ]
        if not fresh:
            return
        last: dict[tuple[str, str], Event] = {}
        for ev in fresh:
            last[(ev.scope, ev.entry_id)] = ev
        gone = [eid for (_, eid), ev in last.items() if ev.type in _REMOVALS]
        reread: dict[str, list[str]] = defaultdict(list)
        for (s, eid), ev in last.items():
            if ev.type not in _REMOVALS:
                reread[s].append(eid)
        scopes = list(reread)
        if scopes:
            got = await self.bb.reads.entries(reread)
            now = self.bb.now_ms()
            ups: list[Entry] = []
            for s in scopes:
                for eid, e in zip(reread[s], got[s], strict=True):
                    if e is None or e.expired(now):
                        gone.append(eid)
                    else:
                        ups.append(e)
            self._embeddings.add(ups)
        if gone:
            self.engine.remove(gone)
        for ev in fresh:
            if feed_id_gt(ev.id, self._applied[ev.scope]):
                self._applied[ev.scope] = ev.id
        self._n["events"] += len(fresh)

    async def _catch_up(self, targets: dict[str, str]) -> None:
        """Pull and apply each scope's events up to its target id (``XRANGE``)."""
        async with self._lock:
            todo = {
                s: t
                for s, t in targets.items()
                if s in self._applied and feed_id_gt(t, self._applied[s])
            }
            while todo:
                got = await self.bb.reads.ranges(
                    {s: (self._applied[s], t) for s, t in todo.items()}, count=500
                )
                events = [ev for evs in got.values() for ev in evs]
                if not events:
                    break  # the target was trimmed away already: nothing left to pull
                await self._apply(events)
                todo = {s: t for s, t in todo.items() if feed_id_gt(t, self._applied[s])}

    async def _read(self, partition: int) -> None:
        backoff = Backoff()  # a lasting failure (a damaged feed) is retried ever slower
        while not self._stopped:
            scopes = sorted(self._by_part[partition])
            pos = {s: self._applied[s] for s in scopes}
            got = await self.bb.reads.events_or_pause(
                pos, partition, count=200, block_ms=self.block_ms,
                stopped=lambda: self._stopped, reader="index follower", backoff=backoff)
            events = [ev for _scope, ev in got]
            if events:
                async with self._lock:
                    await self._apply(events)
