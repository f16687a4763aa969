"""The ``index`` role: embed entries that lack a current embedding, off the write path.

Reads each leased partition's queue of entries waiting for a vector
(:class:`blackboard.vector_queue.VectorQueue`, filled by the mutation scripts while the role
runs), not the bus: a model slower than the writes then holds neither bus events nor
retired entries, and costs one queue member per waiting entry. For each batch it reads the
entries, embeds those whose stored vector is missing or from another embedder, in batches,
and settles them (``embed.lua``, version-checked: an entry changed since stays queued and is
embedded at its new version; a vector is stored only while its entry is still queued, so
each queued version is embedded once). A crash before settling leaves them queued.

Wired in workers/worker.py: ``IndexRole(bb, worker_id, partitions=leases.current)``,
``await role.start()`` / ``await role.stop()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from blackboard import Blackboard, ConsumeCounters, Entry, Event, EventType
from blackboard.errors import OutOfMemory
from blackboard.tasks import cancel_and_wait
from blackboard.vector_queue import INDEX_ROLE, Queued, VectorQueue
from retrieval.embedders import Embedder, default_embedder
from retrieval.text import entry_text

__all__ = ["IndexRole", "bind_reembed", "has_current_vector", "reembed", "run_index_batch"]

from .oom import OomNotice
from .streams import FailureStreak

log = logging.getLogger(__name__)

ROLE = INDEX_ROLE
#: A stop lets the batch in hand finish for this long, then abandons it (re-delivered).
ABANDON_AFTER_S = 1.0
_EMBED = frozenset({EventType.WRITTEN, EventType.UPDATED})
#: Entries embedded per partition visit (one model batch); the rest stay queued.
_PER_VISIT = 64
#: Entries per model call, gathered over partition visits: the model embeds a large call
#: faster per text than several small ones (it sorts a call's texts by length, so a batch
#: pads little); measured 1.3 - 1.5x between calls of 300 and of 37 LoCoMo turns.
_MODEL_BATCH = 128
#: While the model is busy, entries read meanwhile gather up to this many for its next call
#: (one call as large as the backlog pads less and runs fewer times: 600 LoCoMo turns in
#: calls of 128 padded 22,554 tokens in 100 runs, in calls of 128 then 472, 22,086 in 96).
_MAX_MODEL_BATCH = 512


def has_current_vector(e: Entry, embedder: Embedder) -> bool:
    """Whether ``e`` stores a vector of ``embedder`` (its name and its size)."""
    return (
        e.embedding is not None
        and e.embedder == embedder.name
        and len(e.embedding) == embedder.dim * 4
    )


async def reembed(
    bb: Blackboard, entries: Sequence[Entry], embedder: Embedder, *, batch: int = 64
) -> int:
    """Embed ``entries`` (any scopes) in batches and store the vectors; -> how many were
    stored (an entry changed since it was read is skipped). The model runs in a thread."""
    stored = 0
    items = list(entries)
    for i in range(0, len(items), batch):
        part = items[i : i + batch]
        vecs = await asyncio.to_thread(embedder.embed, [entry_text(e) for e in part])
        by_scope: dict[str, list[tuple[str, int, bytes]]] = defaultdict(list)
        for e, v in zip(part, vecs, strict=True):
            by_scope[e.scope].append((e.id, e.version, np.asarray(v, np.float32).tobytes()))
        for scope, its in by_scope.items():
            stored += await bb.scope(scope).set_embeddings(its, embedder.name)
    return stored


def bind_reembed(bb: Blackboard, embedder: Embedder) -> Callable[[list[Entry]], Awaitable[int]]:
    """:func:`reembed` bound to ``bb`` and ``embedder``: the maintenance job's hook."""
    return functools.partial(reembed, bb, embedder=embedder)


async def run_index_batch(bb: Blackboard, events: Iterable[Event], embedder: Embedder) -> int:
    """Embed the entries of ``events`` lacking a current embedding; -> vectors stored.
    For callers holding events (a bus or feed read); the role itself reads its queue."""
    latest: dict[tuple[str, str], Event] = {}
    for ev in events:
        latest[(ev.scope, ev.entry_id)] = ev
    want: dict[str, list[str]] = defaultdict(list)
    updated: set[str] = set()
    for (scope, eid), ev in latest.items():
        if ev.type in _EMBED:
            want[scope].append(eid)
            if ev.type is EventType.UPDATED:
                updated.add(eid)
    todo: list[Entry] = []
    for scope, ids in want.items():
        for e in await bb.scope(scope).get_many(ids):
            if e is not None and (e.id in updated or not has_current_vector(e, embedder)):
                todo.append(e)
    return await reembed(bb, todo, embedder) if todo else 0


@dataclass(eq=False)
class _Flight:
    """A batch handed to the model: each entry with its partition's queue, and the
    thread's future."""

    todo: list[tuple[VectorQueue, Entry]]
    embedder: Embedder
    task: asyncio.Future[Any]


class IndexRole:
    """The loop of the ``index`` role. ``partitions``: the partitions to read (a
    collection, or a callable giving the current set, as partition leases do; None: all).
    ``embedder``: ``"default"`` is MiniLM when installed; with no model the role idles
    (settles the queue, embeds nothing) after one warning; the model loads on the first
    batch that needs it, not when the role starts. ``count``: entries taken per partition
    and round; an idle role polls the queues every ``block_ms``, backing off to 4x that.

    The loop never dies while the role runs: a failure (Redis unreachable, connections
    dropped) is logged, counted and the loop reopened after a backoff; ``streak`` says how
    long it has failed without recovering, so the worker can give its partitions up when
    the role cannot run. An entry the model fails on ``max_deliveries`` times is dropped
    from the queue (logged, counted in ``index_dropped``) so it cannot wedge its partition.
    ``claim_idle_ms``, ``claim_window_ms`` and ``counters`` are kept for the worker's
    wiring (the role reads no bus)."""

    def __init__(
        self,
        bb: Blackboard,
        consumer: str,
        *,
        embedder: Embedder | Literal["default"] | None = "default",
        partitions: Collection[int] | Callable[[], Collection[int]] | None = None,
        count: int = 200,
        block_ms: int = 500,
        claim_idle_ms: int = 5_000,
        max_deliveries: int = 5,
        claim_window_ms: int | None = None,
        counters: ConsumeCounters | None = None,
        oom_say_every_s: float = 30.0,
    ) -> None:
        self.bb, self.consumer = bb, consumer
        self.embedder = default_embedder() if embedder == "default" else embedder
        self.partitions = partitions
        self.count, self.block_ms = count, block_ms
        self.claim_idle_ms, self.max_deliveries = claim_idle_ms, max_deliveries
        self.claim_window_ms = claim_window_ms
        self.consume_counters = counters if counters is not None else ConsumeCounters()
        self.streak = FailureStreak()
        self._oom = OomNotice("index", oom_say_every_s)
        self.reopened = 0
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._attempts: dict[tuple[str, str], int] = {}
        self.batches = 0
        self.embedded = 0
        self.failures = 0
        self.dropped = 0
        self.adopted = 0
        self._prepared = False  # writes queue for us (see start)
        self.abandoned = 0
        #: The batch the model is embedding (in a thread) while the loop reads the next,
        #: and the entries gathered for the next model call.
        self._flight: _Flight | None = None
        self._gathered: list[tuple[VectorQueue, Entry]] = []
        self._in_hand: set[tuple[str, str]] = set()  # (scope, id) of both

    async def start(self) -> None:
        """Make writes queue their entries, carry over the backlog of the bus consumer
        group an older index role read, and start; returns at once. Over Redis's memory
        limit the first two wait in the loop (which says so) until memory is freed."""
        self._stopping.clear()
        with contextlib.suppress(OutOfMemory):
            await self._prepare()
        self._task = asyncio.create_task(self._loop(), name=f"{self.consumer}-index")

    async def _prepare(self) -> None:
        for p in range(self.bb.partitions):
            q = self.bb.vector_queue(p)
            self.adopted += await q.enable()  # what was written before any index role
            self.adopted += await q.adopt_group(ROLE)
        self._prepared = True

    async def stop(self) -> None:
        """Stop; the batch in hand may finish for ``ABANDON_AFTER_S``. A stop does not wait
        for the model (a batch takes seconds, more on a loaded machine): past that the task
        is cancelled and its entries, never settled, stay queued for the next indexer, so
        SIGTERM ends the role within seconds whatever it is doing."""
        self._stopping.set()
        if self._task is None:
            return
        done, _ = await asyncio.wait({self._task}, timeout=ABANDON_AFTER_S)
        if not done:
            await cancel_and_wait([self._task])
            self.abandoned += 1
            log.info("index: stopping; abandoned the embedding in hand (its entries stay "
                     "queued)")
        elif not self._task.cancelled():
            self._task.result()
        self._task = None

    def counters(self) -> dict[str, int]:
        return {
            "index_batches": self.batches,
            "index_embedded": self.embedded,
            "index_failures": self.failures,
            "index_reopened": self.reopened,
            "index_dropped": self.dropped,
            "index_abandoned": self.abandoned,
        }

    async def _loop(self) -> None:
        backoff = 0.1
        while not self._stopping.is_set():
            self.streak.running()
            try:
                await self._consume()
                return  # stopped
            except OutOfMemory:
                self.reopened += 1
                self._oom.say("reading waits until memory is freed")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), backoff)
                backoff = min(backoff * 2, 5.0)
            except Exception:
                self.reopened += 1
                if self.streak.failed():
                    backoff = 0.1
                log.exception("index loop failed; reopening in %.1fs", backoff)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), backoff)
                backoff = min(backoff * 2, 5.0)

    def _current_partitions(self) -> list[int]:
        if self.partitions is None:
            return list(range(self.bb.partitions))
        src = self.partitions() if callable(self.partitions) else self.partitions
        return sorted(p for p in src if 0 <= p < self.bb.partitions)

    async def _consume(self) -> None:
        if not self._prepared:
            await self._prepare()
        idle = self.block_ms / 1000
        try:
            while not self._stopping.is_set():
                took = await self._round()
                if self._stopping.is_set():
                    break
                self.streak.succeeded()
                if took:
                    idle = self.block_ms / 1000
                    continue
                await self._land()  # nothing more to read: settle the batch in flight
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), idle)
                idle = min(idle * 2, 4 * self.block_ms / 1000)
            await self._land()  # a stop lets the batch in hand finish (stop() bounds it)
        finally:  # a failure or cancel: the entries in hand stay queued
            self._flight = None
            self._gathered = []
            self._in_hand = set()

    async def _round(self) -> int:
        """One visit of every partition; -> queue members taken."""
        took = 0
        for p in self._current_partitions():
            # Members whose entries are gone (evicted while the model lagged) cost no
            # embedding: skip through up to 10 batches of them before the next
            # partition, so the queue's head stays at entries still alive.
            for _ in range(10):
                items = await self._take(p)
                if not items:
                    break
                took += len(items)
                embedded = await self._index(p, items)
                self.batches += 1
                if embedded or self._stopping.is_set():
                    break
            if self._stopping.is_set():
                break
        if self._gathered and self.embedder is not None:
            await self._launch(self.embedder)
        return took

    async def _take(self, partition: int) -> list[Queued]:
        """The partition's longest waiting entries, less those the model has in hand (they
        stay queued until settled)."""
        # One visit's worth (and what is in hand): a larger read would fetch entries the
        # visit cannot embed, only to read them again on the next (Redis and the loop
        # share the cores with the model).
        hand = self._in_hand
        items = await self.bb.vector_queue(partition).take(
            min(self.count, _PER_VISIT + len(hand)))
        return [q for q in items if (q.scope, q.entry_id) not in hand] if hand else items

    async def _index(self, partition: int, items: list[Queued]) -> int:
        """Embed and settle one partition's batch of queued entries; -> how many needed
        the model."""
        by_scope: dict[str, list[str]] = defaultdict(list)
        for q in items:
            by_scope[q.scope].append(q.entry_id)
        vq = self.bb.vector_queue(partition)
        name = self.embedder.name if self.embedder is not None else ""
        todo: list[Entry] = []
        for scope, ids in by_scope.items():
            settle: list[tuple[str, int | None, bytes]] = []
            for eid, e in zip(ids, await self.bb.scope(scope).get_many(ids), strict=True):
                if e is None:
                    settle.append((eid, None, b""))
                elif self.embedder is None or has_current_vector(e, self.embedder):
                    settle.append((eid, e.version, b""))
                else:
                    todo.append(e)
            if settle:
                await vq.settle(scope, settle, name)
        if todo and self.embedder is not None:
            # One model batch per visit, oldest first: the next partition's gone entries
            # are settled sooner, so no partition's queue waits a whole round of batches.
            order = {(q.scope, q.entry_id): i for i, q in enumerate(items)}
            todo.sort(key=lambda e: order[(e.scope, e.id)])
            todo = todo[:_PER_VISIT]
            self._gathered += [(vq, e) for e in todo]
            self._in_hand.update((e.scope, e.id) for e in todo)
            busy = self._flight is not None and not self._flight.task.done()
            if len(self._gathered) >= (_MAX_MODEL_BATCH if busy else _MODEL_BATCH):
                await self._launch(self.embedder)
        return len(todo)

    async def _launch(self, embedder: Embedder) -> None:
        """Hand the gathered entries to the model once it is done with the batch in
        flight: the loop reads and filters the next batch while the model runs, so the
        model waits for Redis only for the settling of one batch, not for every read."""
        done = await self._wait_flight()
        todo, self._gathered = self._gathered, []
        texts = [entry_text(e) for _, e in todo]
        self._flight = _Flight(todo, embedder,
                               asyncio.ensure_future(asyncio.to_thread(embedder.embed, texts)))
        if done is not None:
            await self._settle(*done)

    async def _land(self) -> None:
        """Wait for the batch in flight, if any, and settle it."""
        done = await self._wait_flight()
        if done is not None:
            await self._settle(*done)

    async def _wait_flight(self) -> tuple[_Flight, Any] | None:
        """The batch in flight and its vectors (or the exception the model raised), once
        the model is done with it; None when nothing is in flight."""
        f = self._flight
        if f is None:
            return None
        try:
            got: Any = await asyncio.shield(f.task)
        except Exception as exc:
            got = exc
        self._flight = None
        return f, got

    async def _settle(self, f: _Flight, got: Any) -> None:
        self._in_hand.difference_update((e.scope, e.id) for _, e in f.todo)
        if isinstance(got, Exception):
            self.failures += 1
            log.error("embedding %d entries failed; they stay queued", len(f.todo),
                      exc_info=got)
            for vq, e in f.todo:
                await self._count_failure(vq, [e])
            return
        by_scope: dict[str, tuple[VectorQueue, list[tuple[str, int | None, bytes]]]] = {}
        for (vq, e), v in zip(f.todo, got, strict=True):
            by_scope.setdefault(e.scope, (vq, []))[1].append(
                (e.id, e.version, np.asarray(v, np.float32).tobytes()))
            self._attempts.pop((e.scope, e.id), None)
        for scope, (vq, its) in by_scope.items():
            self.embedded += await vq.settle(scope, its, f.embedder.name)

    async def _count_failure(self, vq: VectorQueue, part: list[Entry]) -> None:
        """One more failed attempt for each of ``part``; those at ``max_deliveries`` leave
        the queue (they would otherwise come first in every batch of their partition)."""
        for e in part:
            n = self._attempts[(e.scope, e.id)] = self._attempts.get((e.scope, e.id), 0) + 1
            if n >= self.max_deliveries:
                self._attempts.pop((e.scope, e.id), None)
                self.dropped += await vq.drop(e.scope, e.id)
                log.error("entry %s of %s dropped from the index queue after %d failed "
                          "embeddings (blackboard maintenance reindex retries it)",
                          e.id, e.scope, n)
