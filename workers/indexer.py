"""The ``index`` role: embed entries that lack a current embedding, off the write path.

Consumes the partition buses as consumer group ``index``; for each batch, reads the
entries its ``written``/``updated`` events name, embeds those whose stored vector is
missing or from another embedder (an ``updated`` entry always: the update script keeps the
old vector, which may no longer match the text), in batches, stores the vectors with
``Scope.set_embeddings`` (version-checked: an entry changed since is skipped, its own
event re-embeds it) and then acks. A crash before the ack re-delivers the batch; embedding
twice is harmless.

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
from typing import Literal

import numpy as np

from blackboard import Batch, Blackboard, ConsumeCounters, ConsumeOptions, Entry, Event, EventType
from blackboard.tasks import cancel_and_wait
from retrieval.embedders import Embedder, default_embedder
from retrieval.text import entry_text

__all__ = ["IndexRole", "bind_reembed", "reembed", "run_index_batch"]

from .streams import FailureStreak, until_stopped

log = logging.getLogger(__name__)

ROLE = "index"
#: A stop lets the batch in hand finish for this long, then abandons it (re-delivered).
ABANDON_AFTER_S = 1.0
_EMBED = frozenset({EventType.WRITTEN, EventType.UPDATED})


def _current(e: Entry, embedder: Embedder) -> bool:
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
    """Embed the entries of ``events`` lacking a current embedding; -> vectors stored."""
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
            if e is not None and (e.id in updated or not _current(e, embedder)):
                todo.append(e)
    return await reembed(bb, todo, embedder) if todo else 0


class IndexRole:
    """The consume loop of the ``index`` role. ``partitions``: the partitions to read (a
    collection, or a callable giving the current set, as partition leases do; None: all).
    ``embedder``: ``"default"`` is MiniLM when installed; with no model the role idles
    (acks, embeds nothing) after one warning; the model loads on the first batch that needs
    it, not when the role starts.

    The consume loop never dies while the role runs: a failed stream (Redis unreachable,
    connections dropped) is logged, counted and reopened after a backoff; ``streak`` says
    how long it has failed without recovering, so the worker can give its partitions up
    when the role cannot run."""

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
    ) -> None:
        self.bb, self.consumer = bb, consumer
        self.embedder = default_embedder() if embedder == "default" else embedder
        self.partitions = partitions
        self.count, self.block_ms = count, block_ms
        self.claim_idle_ms, self.max_deliveries = claim_idle_ms, max_deliveries
        self.claim_window_ms = claim_window_ms
        self.consume_counters = counters if counters is not None else ConsumeCounters()
        self.streak = FailureStreak()
        self.reopened = 0
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.batches = 0
        self.embedded = 0
        self.failures = 0
        self.abandoned = 0

    async def start(self) -> None:
        """Create the consumer group and start consuming; returns at once."""
        await self.bb.ensure_groups([ROLE])
        self._stopping.clear()
        self._task = asyncio.create_task(self._loop(), name=f"{self.consumer}-index")

    async def stop(self) -> None:
        """Finish the batch in hand and stop."""
        self._stopping.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def counters(self) -> dict[str, int]:
        return {
            "index_batches": self.batches,
            "index_embedded": self.embedded,
            "index_failures": self.failures,
            "index_reopened": self.reopened,
            "index_abandoned": self.abandoned,
        }

    async def _loop(self) -> None:
        backoff = 0.1
        while not self._stopping.is_set():
            self.streak.running()
            try:
                await self._consume()
                return  # stopped
            except Exception:
                self.reopened += 1
                if self.streak.failed():
                    backoff = 0.1
                log.exception("index consume loop failed; reopening in %.1fs", backoff)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), backoff)
                backoff = min(backoff * 2, 5.0)

    async def _consume(self) -> None:
        opts = ConsumeOptions(
            count=self.count,
            block_ms=self.block_ms,
            claim_idle_ms=self.claim_idle_ms,
            claim_window_ms=self.claim_window_ms,
            max_deliveries=self.max_deliveries,
        )
        stream = self.bb.consume(
            ROLE,
            self.consumer,
            partitions=self.partitions,
            options=opts,
            counters=self.consume_counters,
        )
        async for batch in until_stopped(stream, self._stopping):
            if not await self._handle_or_abandon(batch):
                return

    async def _handle_or_abandon(self, batch: Batch) -> bool:
        """Embed and ack ``batch``; -> False when a stop abandoned it. A stop does not wait
        for the model (a batch of 200 texts takes seconds, minutes on a loaded machine):
        after ``ABANDON_AFTER_S`` the batch is released unacked and its next owner
        re-embeds it, so SIGTERM ends the role within seconds whatever it is doing."""
        work = asyncio.ensure_future(self._handle(batch))
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
            if not work.done():
                await asyncio.wait({work}, timeout=ABANDON_AFTER_S)
            if work.done():
                work.result()
                return True
            await cancel_and_wait([work])
            batch.release()
            self.abandoned += 1
            log.info("index: stopping; abandoned the batch in hand on partition %d "
                     "(%d events, re-delivered)", batch.partition, len(batch.events))
            return False
        finally:
            stop.cancel()

    async def _handle(self, batch: Batch) -> None:
        try:
            if self.embedder is not None:
                self.embedded += await run_index_batch(self.bb, batch.events, self.embedder)
            await batch.ack()
            self.batches += 1
            self.streak.succeeded()
        except Exception:
            self.failures += 1
            log.exception(
                "index batch on partition %d failed; it stays pending", batch.partition
            )
            batch.release()
