"""Consumption of the partition buses through consumer groups (one group per role).

Each owned partition gets a reader task that first re-delivers what this consumer left
pending, then claims what dead consumers left pending for longer than ``claim_idle_ms``
(``XAUTOCLAIM``; every ``claim_every_ms``, during ``claim_window_ms`` after the reader
started when that is set), then blocks on new events (``XREADGROUP >``, up to the client's
:attr:`~blackboard.settings.ClientSettings.max_block_ms`, on a connection of its own that
it adds to the pool). An idle reader costs one command per block. A reader waits until its
batch is acked or released before reading on, so events of a partition are handled in
order by one consumer at a time. An event whose handler failed ``max_deliveries`` times goes
to the partition's DLQ (and is acked) in one script; so does one delivered
``DELIVERY_GUARD`` times as often, which only consumers dying while they hold it cause (a
poison event that kills its worker). A takeover after a crash is not a failure: counting it
dead-lettered healthy events when workers were killed repeatedly mid-batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any

from . import retries
from .batch import (
    Batch,
    BatchSink,
    ConsumeCounters,
    ConsumeOptions,
    PartitionSource,
)
from .entry import Event, decode_event
from .keys import PartitionKeys
from .scripts import run_script

if TYPE_CHECKING:
    from .board import Blackboard

# Batch and its kin are re-exported: this module is where consumers look for them.
__all__ = [
    "Batch",
    "ConsumeCounters",
    "ConsumeOptions",
    "PartitionSource",
    "ReaderPool",
    "consume",
]

log = logging.getLogger(__name__)

#: Deliveries, in units of ``max_deliveries``, after which an event is dead-lettered even
#: though no handler failed on it: its consumers kept dying while they held it.
DELIVERY_GUARD = 4


class _Reader:
    def __init__(
        self,
        bb: Blackboard,
        role: str,
        consumer: str,
        partition: int,
        opts: ConsumeOptions,
        out: BatchSink,
        counters: ConsumeCounters,
    ) -> None:
        self.bb, self.role, self.consumer, self.partition = bb, role, consumer, partition
        self.opts, self.out, self.counters = opts, out, counters
        self.bus = PartitionKeys(partition).bus
        self._last_claim = 0.0
        self._claims_until = float("inf")
        #: Set when the partition is given up. The reader must stop even if a cancellation
        #: is swallowed mid-read: a lingering reader would keep re-claiming (and counting
        #: deliveries of) events that no one processes, until they land in the DLQ.
        self.retired = False
        self._redeliver_delay = 0.0
        self._bad: list[tuple[Any, dict[bytes, bytes]]] = []
        self.progress = counters.started(partition, bb.now_ms())
        #: handler failures per event id (released, not acked) seen by this reader
        self._failures: dict[str, int] = {}

    def _events(self, items: Iterable[Any]) -> list[Event]:
        evs = []
        for sid, fields in items:
            if not fields:  # entry trimmed or deleted while pending: nothing to deliver
                self.counters.gone += 1
                log.warning(
                    "%s: event %r of partition %d left the bus while pending; skipped",
                    self.role, sid, self.partition,
                )
                continue
            try:
                evs.append(decode_event(sid, fields, self.partition))
            except (ValueError, KeyError, TypeError):
                self._bad.append((sid, fields))
        return evs

    async def _flush_bad(self) -> None:
        """Undecodable events (forged or corrupt) go to the DLQ instead of looping forever."""
        while self._bad:
            sid, fields = self._bad.pop()
            self.counters.undecodable += 1
            log.warning(
                "%s: undecodable event %r of partition %d moved to the DLQ",
                self.role, sid, self.partition,
            )
            flat: list[Any] = []
            for k, v in fields.items():
                flat += [b"orig_" + k, v]
            await self.bb.bus(self.partition).dead_letter_fields(
                self.role, sid, 1, "undecodable event", flat, self.opts.dlq_maxlen
            )

    async def _deliver(self, events: list[Event]) -> bool:
        theirs = [e.id for e in events if e.only is not None and e.only != self.role]
        if theirs:  # re-driven for another group: this role handled it the first time
            self.counters.not_ours += len(theirs)
            await self.bb.bus(self.partition).ack(self.role, theirs)
            events = [e for e in events if e.only is None or e.only == self.role]
        if not events:
            return True
        wait = 0.1
        while True:
            if self.retired:
                return False
            batch = Batch(self.role, self.consumer, self.partition, events, self.bb, reader=self)
            await self.out.put(batch)
            await batch._done.wait()
            if not batch.deferred:
                break
            # Deferred (Redis over maxmemory): the same events again once it may have room;
            # still pending for this consumer, not re-claimed, so no delivery is counted.
            await asyncio.sleep(wait)
            wait = min(wait * 2, 2.0)
        self.progress.moved(self.bb.now_ms(), len(events) if batch.acked else 0)
        for ev in events:
            if batch.acked or ev.id in batch.acked_ids:
                self._failures.pop(ev.id, None)
            else:
                self._failures[ev.id] = self._failures.get(ev.id, 0) + 1
        return batch.acked

    async def _pending_mine(self) -> list[Event]:
        """Own pending events, re-claimed to count a delivery; those that failed too often (or
        were delivered far too often) to the DLQ."""
        client = self.bb.client
        rows = await client.xpending_range(
            self.bus, self.role, min="-", max="+", count=self.opts.count, consumername=self.consumer
        )
        if not rows:
            return []
        limit = self.opts.max_deliveries

        def too_often(r: Any) -> bool:
            failed = self._failures.get(r["message_id"].decode(), 0)
            return failed >= limit or r["times_delivered"] >= limit * DELIVERY_GUARD

        over = [r for r in rows if too_often(r)]
        keep = [r["message_id"] for r in rows if not too_often(r)]
        if over:
            items = await client.xclaim(
                self.bus, self.role, self.consumer, 0, [r["message_id"] for r in over]
            )
            for ev in self._events(items):
                n = next(r["times_delivered"] for r in over if r["message_id"].decode() == ev.id)
                failed = self._failures.pop(ev.id, 0)
                why = (f"its handler failed {failed} times" if failed >= limit else
                       f"delivered {n} times: its consumers died holding it")
                self.counters.over_delivered += 1
                log.warning(
                    "%s: event %s of partition %d %s; moved to the DLQ",
                    self.role, ev.id, self.partition, why,
                )
                await self.bb.bus(self.partition).dead_letter(
                    self.role,
                    ev,
                    n,
                    "max deliveries exceeded" + ("" if failed >= limit else
                                                 ": its consumers died holding it"),
                    self.opts.dlq_maxlen,
                )
        if not keep:
            return []
        items = await client.xclaim(self.bus, self.role, self.consumer, 0, keep)
        return self._events(items)

    async def _claim_dead(self, idle_ms: int | None = None) -> None:
        """Take over events other consumers left pending for longer than claim_idle_ms."""
        start = "0-0"
        while True:
            reply = await run_script(
                self.bb.client,
                "claim",
                [self.bus],
                [
                    self.role,
                    self.consumer,
                    str(self.opts.claim_idle_ms if idle_ms is None else idle_ms),
                    start,
                    str(self.opts.count),
                ],
            )
            start = reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])
            self.counters.claimed += len(reply) - 1
            if start == "0-0":
                break

    async def _after(self, acked: bool) -> None:
        """Back off before re-delivering a batch that was not acked (each re-delivery counts
        toward ``max_deliveries``, so a transient failure must not burn them at once)."""
        if acked:
            self._redeliver_delay = 0.0
            return
        self._redeliver_delay = min(max(0.05, self._redeliver_delay * 2), 2.0)
        await asyncio.sleep(self._redeliver_delay)

    def _block_ms(self, now: float) -> int:
        """Block until the next claim is due, else as long as the client allows."""
        block = min(self.opts.block_ms, self.bb.settings.max_block_ms)
        if now < self._claims_until:
            due = self._last_claim + self.opts.claim_every_ms / 1000 - now
            block = min(block, max(1, int(due * 1000)))
        return max(1, block)

    async def run(self) -> None:
        self.bb.reserve_connections(1)  # the blocking read holds one for itself
        # Whoever reads a bus fills it: the process's relay for this partition runs while
        # any of its readers does (the mutation scripts only append to the inbox).
        self.bb.relays.acquire(self.partition)
        try:
            await self.bb.bus(self.partition).ensure_group(self.role)
            if self.opts.claim_window_ms is not None:
                self._claims_until = time.monotonic() + self.opts.claim_window_ms / 1000
            # Own pending events exist only at start, after a claim, after a batch not fully
            # acked and after a read whose reply a failed connection may have lost
            # (blackboard.retries); skipping XPENDING otherwise saves a round trip a batch.
            check_pending = True
            while not self.retired:
                now = time.monotonic()
                first = self._last_claim == 0.0
                if first or (
                    now < self._claims_until
                    and now - self._last_claim >= self.opts.claim_every_ms / 1000
                ):
                    self._last_claim = now
                    await self._claim_dead(self.opts.takeover_idle_ms if first else None)
                    check_pending = True
                if check_pending:
                    pending = await self._pending_mine()
                    await self._flush_bad()
                    if pending:
                        await self._after(await self._deliver(pending))
                        continue
                    check_pending = False
                try:
                    with retries.unretried():
                        reply = await self.bb.client.xreadgroup(
                            self.role,
                            self.consumer,
                            {self.bus: ">"},
                            count=self.opts.count,
                            block=self._block_ms(time.monotonic()),
                        )
                except retries.ReplyMaybeLost:
                    # Its events, if Redis handed any out, wait in our pending list.
                    check_pending = True
                    continue
                self.progress.moved(self.bb.now_ms())
                for _stream, items in reply or ():
                    evs = self._events(items)
                    await self._flush_bad()
                    acked = await self._deliver(evs)
                    check_pending = check_pending or not acked
                    await self._after(acked)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # surfaced to the consumer loop, not swallowed
            await self.out.put(exc)
        finally:
            self.bb.relays.release(self.partition)
            self.bb.reserve_connections(-1)


class ReaderPool:
    """One reader task per owned partition, started and retired as ownership changes.

    Readers hand their batches to ``out``: a queue (:func:`consume`) or a sink that runs a
    handler in the reader's own task (:func:`blackboard.handler_loop.handle_batches`).
    """

    def __init__(
        self,
        bb: Blackboard,
        role: str,
        consumer: str,
        partitions: PartitionSource,
        opts: ConsumeOptions,
        out: BatchSink,
        counters: ConsumeCounters | None = None,
    ) -> None:
        self.bb, self.role, self.consumer = bb, role, consumer
        self.partitions, self.opts, self.out = partitions, opts, out
        self.counters = counters if counters is not None else ConsumeCounters()
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.readers: dict[int, _Reader] = {}
        self._retiring: set[asyncio.Task[None]] = set()  # given-up partitions, until gone

    def owned(self) -> set[int]:
        if self.partitions is None:
            return set(range(self.bb.partitions))
        src = self.partitions() if callable(self.partitions) else self.partitions
        return {p for p in src if 0 <= p < self.bb.partitions}

    def current(self, batch: Batch) -> bool:
        """Whether ``batch`` comes from the live reader of an owned partition."""
        return batch.reader is self.readers.get(batch.partition)

    def rebalance(self) -> None:
        want = self.owned()
        for t in list(self._retiring):
            if t.done():
                self._retiring.discard(t)
            else:
                t.cancel()  # again: a cancellation can be swallowed mid-read (see close)
        for p in list(self.tasks):
            if p not in want or self.tasks[p].done() or self.readers[p].progress.stalled:
                t = self.tasks.pop(p)
                self.readers.pop(p).retired = True
                t.cancel()
                self._retiring.add(t)
        for p in want - self.tasks.keys():
            reader = self.readers[p] = _Reader(
                self.bb, self.role, self.consumer, p, self.opts, self.out, self.counters
            )
            self.tasks[p] = asyncio.create_task(reader.run(), name=f"bb-consume-{self.role}-{p}")

    def retire_all(self) -> None:
        """Readers stop before their next read; a batch in hand is finished."""
        for r in self.readers.values():
            r.retired = True

    async def close(self) -> None:
        # Cancel until every reader is gone: redis-py's cluster client can swallow a
        # cancellation that lands mid-read (the reader then blocks on the next XREADGROUP),
        # so a single cancel() followed by an unbounded await could hang here.
        alive = set(self.tasks.values()) | self._retiring
        while alive:
            for t in alive:
                t.cancel()
            _, alive = await asyncio.wait(alive, timeout=0.2)
        for t in self.tasks.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t


async def consume(
    bb: Blackboard,
    role: str,
    consumer: str,
    partitions: PartitionSource = None,
    opts: ConsumeOptions | None = None,
    counters: ConsumeCounters | None = None,
) -> AsyncIterator[Batch]:
    """Yield batches for ``role`` as ``consumer`` from the partitions it owns.

    ``partitions`` is a fixed collection, a callable returning the currently owned set
    (re-evaluated every ``rebalance_every_ms``; this is where leases plug in), or None for
    all partitions. A batch not acked when the next one is asked for is released.
    """
    opts = opts or ConsumeOptions()
    queue: asyncio.Queue[Batch | BaseException] = asyncio.Queue()
    pool = ReaderPool(bb, role, consumer, partitions, opts, queue, counters)
    pool.rebalance()
    last = time.monotonic()
    try:
        while True:
            timeout = max(0.0, opts.rebalance_every_ms / 1000 - (time.monotonic() - last))
            try:
                item = await asyncio.wait_for(queue.get(), timeout)
            except TimeoutError:
                item = None
            if time.monotonic() - last >= opts.rebalance_every_ms / 1000:
                last = time.monotonic()
                pool.rebalance()
            if item is None:
                continue
            if isinstance(item, BaseException):
                raise item
            if not pool.current(item):
                item.release()  # partition given up meanwhile: its new owner re-delivers
                continue
            try:
                yield item
            finally:
                if not item._done.is_set():
                    item.release()
    finally:
        await pool.close()
