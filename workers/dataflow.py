"""Durable dataflow: bus events -> edge pending buffers -> transformer -> target scope.

1. For each batch of bus events, the events whose scope matches an edge's source pattern and
   whose tags pass its filter are appended to ``pending:<edge>:<target>`` and acked in one
   script (``buffer.lua``).
2. When the edge's trigger fires (count, age, timer), the buffer's head batch is fixed and
   read (``pending_head.lua``), the entries it names are re-read in one call (an event is
   only a hint: a forged one can at most cause a real entry to be re-processed), the
   transformer runs, its drafts are written to the target scope with deterministic ids,
   then the head is trimmed (``pending_take.lua``).
A crash anywhere replays to the same target entries: the ids depend only on the edge, the
target and the sources, so re-writing them is a no-op.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from blackboard import Blackboard, Entry, EntryRef, Event, EventType, WriteRequest, tracing
from blackboard.edges_version import version_string
from blackboard.errors import OutOfMemory
from blackboard.pending import PendingBuffer
from consolidation.llm.errors import InvalidLLMOutput
from memory.subscriptions import MemorySubscription

from .edgeset import EdgeSet
from .oom import OomNotice
from .target_turn import TURN_RETRY_S, TURN_TTL_MS, target_turn

__all__ = ["BufferItem", "DataflowRunner", "max_batch"]

log = logging.getLogger(__name__)

#: A fire refused for want of memory (Redis over maxmemory) is tried again this much later.
OOM_RETRY_S = 1.0

DLQ_MAXLEN = 100_000


DEFAULT_MAX_BATCH = 256

#: Edge reloads one batch may need before it is given up (released, re-delivered later):
#: each means an edge changed again while the batch was being matched.
MAX_EDGE_RELOADS = 10


def max_batch(edge: MemorySubscription) -> int:
    """Items per transformer call: the edge's ``max_batch`` param, else 256."""
    v = edge.params.get("max_batch", DEFAULT_MAX_BATCH)
    return int(v) if isinstance(v, int) and v > 0 else DEFAULT_MAX_BATCH


@dataclass(frozen=True, slots=True)
class BufferItem:
    """One buffered source reference: ``<at ms>|<scope>|<entry id>`` in Redis."""

    at: int
    scope: str
    entry_id: str

    def encode(self) -> str:
        return f"{self.at}|{self.scope}|{self.entry_id}"

    @classmethod
    def decode(cls, raw: bytes | str) -> BufferItem:
        s = raw.decode() if isinstance(raw, bytes) else raw
        at, scope, entry_id = s.split("|", 2)
        return cls(int(at), scope, entry_id)


def _stream_id(sid: str) -> tuple[int, int]:
    """A stream id ``<ms>-<seq>`` as a pair that sorts like the stream."""
    ms, _, seq = sid.partition("-")
    return int(ms), int(seq or 0)


@dataclass
class RunnerCounters:
    events: int = 0
    buffered: int = 0
    skipped: int = 0
    fired: int = 0
    written: int = 0
    dead_lettered: int = 0
    errors: int = 0
    edge_reloads: int = 0


@dataclass
class DataflowRunner:
    """Runs the edges whose transformers belong to one worker role.

    ``transform`` is ``async (edge, target, entries, now_ms) -> list[WriteRequest-like]``:
    the worker supplies it (consolidation transformers); it raises to dead-letter a batch.
    ``edges`` holds the role's edges and the edges version they were loaded under.
    """

    bb: Blackboard
    role: str
    edges: EdgeSet
    transform: Callable[[MemorySubscription, str, list[Entry], int], Any]
    max_failures: int = 3
    crash_window_ms: int = 0
    #: Whether this runner still owns a partition (its lease): firing stops as soon as it
    #: does not, so a worker that handed a partition over does not keep draining (and
    #: duplicating the work of) the new owner.
    owns: Callable[[int], bool] = lambda p: True
    counters: RunnerCounters = field(default_factory=RunnerCounters)
    #: While Redis is over its maxmemory, firing says it waits once per this many seconds.
    oom_say_every_s: float = 30.0
    #: Whether an edge takes an entry again when it is updated (a transformer that reads
    #: steps, such as episodic, takes each step once: an update, e.g. dedupe's merge into
    #: it, is not a new step).
    updates: Callable[[MemorySubscription], bool] = lambda edge: True
    #: How long a firing's turn on a shared target outlives a dead holder
    #: (:mod:`workers.target_turn`); workers pass their partition lease TTL.
    turn_ttl_ms: int = TURN_TTL_MS

    def __post_init__(self) -> None:
        self._last_fire: dict[str, float] = {}
        self._failures: dict[tuple[str, str], int] = defaultdict(int)
        self._locks: dict[int, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._retry_at: dict[str, float] = {}
        self._oom = OomNotice(f"{self.role} firing", self.oom_say_every_s)

    def last_fired(self, key: str) -> float:
        """When buffer ``key`` last fired (s, Redis clock; 0 if never): timer triggers."""
        return self._last_fire.get(key, 0.0)

    def retry_at(self, key: str) -> float | None:
        """When a failed fire of buffer ``key`` may be tried again (s, Redis clock)."""
        return self._retry_at.get(key)

    # -- 1. buffering ---------------------------------------------------------------------

    async def buffer(self, partition: int, consumer: str, events: Sequence[Event]) -> set[str]:
        """Append matching events to buffers and ack all ``events`` this consumer still owns.

        The events are matched against the edges loaded under the partition's current edges
        version: buffer.lua refuses a batch matched under an older one, and it is matched
        again after a reload. Returns the buffer keys that received items.
        """
        if not events:
            return set()
        if tracing.ENABLED and any(ev.traceparent for ev in events):
            with tracing.fan_in("dataflow.buffer", [ev.traceparent for ev in events], {
                "blackboard.role": self.role, "blackboard.partition": partition,
                "blackboard.events": len(events),
            }):
                return await self._buffer(partition, consumer, events)
        return await self._buffer(partition, consumer, events)

    async def _buffer(self, partition: int, consumer: str, events: Sequence[Event]) -> set[str]:
        part = self.bb.pending(partition)
        for _ in range(MAX_EDGE_RELOADS):
            used = self.edges.version(partition)
            keys, args = self._match(part, consumer, events, used)
            appended, second = await part.append(keys, args)
            if appended >= 0:
                break
            current = version_string(second)
            self.counters.edge_reloads += 1
            await self.edges.stale(partition, used, current)
        else:
            raise RuntimeError(f"the edges of partition {partition} changed "
                               f"{MAX_EDGE_RELOADS} times while one batch was matched")
        skipped = int(second)
        self.counters.events += len(events) - skipped
        self.counters.buffered += appended
        self.counters.skipped += skipped
        return set(keys) if appended else set()

    def _match(self, part: PendingBuffer, consumer: str, events: Sequence[Event],
               version: str) -> tuple[list[str], list[str]]:
        """buffer.lua's buffer keys and arguments for ``events`` under the loaded edges."""
        keys: list[str] = []
        index: dict[str, int] = {}
        lo = min(_stream_id(ev.id) for ev in events)
        hi = max(_stream_id(ev.id) for ev in events)
        args: list[str] = [
            self.role,
            consumer,
            str(len(events)),
            f"{lo[0]}-{lo[1]}",
            f"{hi[0]}-{hi[1]}",
            version,
        ]
        edges = self.edges.edges
        for ev in events:
            pairs: list[str] = []
            if ev.type in (EventType.WRITTEN, EventType.UPDATED):
                for edge in edges:
                    if ev.type is EventType.UPDATED and not self.updates(edge):
                        continue
                    target = edge.accepts(ev.scope, ev.tags, ev.at)
                    if target is None:
                        continue
                    key = part.key(edge.id, target)
                    if key not in index:
                        index[key] = len(keys) + 1
                        keys.append(key)
                    pairs += [str(index[key]), BufferItem(ev.at, ev.scope, ev.entry_id).encode()]
            args += [ev.id, str(len(pairs) // 2), *pairs]
        return keys, args

    # -- 2. firing ------------------------------------------------------------------------

    async def check(self, partition: int, keys: Iterable[str] | None = None) -> int:
        """Fire every due buffer of ``partition`` (all of them when ``keys`` is None).

        Buffers are drained concurrently, each in order: they are independent (own head,
        own in-flight boundary), and a worker waiting on one buffer's round trips runs
        another's transformer meanwhile. Returns how many drains went round more than once.
        """
        part = self.bb.pending(partition)
        if keys is None:
            keys = await part.keys()
        # One check per partition at a time: two would drain the same buffers twice over.
        async with self._locks[partition]:
            results = await asyncio.gather(
                *(self._drain(part, key) for key in sorted(keys)), return_exceptions=True
            )
        # Every drain has finished before an error surfaces, so none outlives the lock.
        for r in results:
            if isinstance(r, BaseException):
                raise r
        return sum(r for r in results if isinstance(r, int))

    async def _drain(self, part: PendingBuffer, key: str) -> int:
        edge_id, target = part.parse(key)
        if self.edges.get(edge_id) is None:
            return 0  # another role's edge (a removed edge's buffers are dropped with it)
        fired = 0
        while self.owns(part.partition) and await self._maybe_fire(part, key, edge_id, target):
            fired += 1
        return fired

    async def _maybe_fire(self, part: PendingBuffer, key: str, edge_id: str, target: str) -> bool:
        st = await part.state(key)
        size, head, inflight = st.size, st.head, st.inflight
        used, current = self.edges.version(part.partition), version_string(st.edges_version)
        if current != used:
            # A changed trigger or params apply from this fire on; a removed edge stops.
            self.counters.edge_reloads += 1
            await self.edges.stale(part.partition, used, current)
        edge = self.edges.get(edge_id)
        if edge is None or not size or head is None:
            return False
        now = self.bb.now_ms() / 1000  # item stamps are on the Redis clock
        if now < self._retry_at.get(key, 0.0):
            return False  # backing off after a failed attempt
        oldest = BufferItem.decode(head).at / 1000
        since = now - self._last_fire.get(key, 0.0)
        # A batch left in flight by a crash is replayed at once, whatever the trigger says.
        if not inflight and not edge.trigger.fires(size, max(0.0, now - oldest), since):
            return False
        if not await self._fire(part, key, edge, target, max_batch(edge)):
            return False  # the target was busy: tried again shortly, the timer unchanged
        self._last_fire[key] = self.bb.now_ms() / 1000
        return size > max_batch(edge)

    async def _fire(
        self, part: PendingBuffer, key: str, edge: MemorySubscription, target: str, limit: int
    ) -> bool:
        """Fire one batch; False when the target was another firing's turn (see
        :mod:`workers.target_turn`): the batch stays buffered, tried again shortly."""
        async with target_turn(self.bb, edge, target, self.turn_ttl_ms) as mine:
            if not mine:
                self._retry_at[key] = self.bb.now_ms() / 1000 + TURN_RETRY_S
                return False
            await self._fire_batch(part, key, edge, target, limit)
            return True

    async def _fire_batch(
        self, part: PendingBuffer, key: str, edge: MemorySubscription, target: str, limit: int
    ) -> None:
        # pending_head.lua makes the batch boundary durable before the transformer runs: a
        # replay after a crash takes exactly the same items even if the buffer has grown
        # meanwhile, so it produces the same draft ids (sources are part of them).
        raw = await part.head(key, limit)
        if not raw:
            return
        items = [BufferItem.decode(r) for r in raw]
        entries = await self._load(part.partition, items)
        now_ms = max(i.at for i in items)  # reproducible: depends on the batch, not the clock
        try:
            if entries:
                await self._consolidate(edge, target, entries, now_ms)
        except OutOfMemory:
            # Nothing was written and it is not the batch's fault: tried again, uncounted
            # (never dead-lettered for want of memory), until memory is freed.
            self._oom.say("the batch stays in its buffer until memory is freed")
            self._retry_at[key] = self.bb.now_ms() / 1000 + OOM_RETRY_S
            return
        except Exception as exc:
            self.counters.errors += 1
            fkey = (key, raw[0].decode())
            self._failures[fkey] += 1
            # Invalid LLM output was already repaired once (the client): asking again asks
            # the same question at temperature 0, spending tokens for the same answer.
            again = not isinstance(exc, InvalidLLMOutput)
            if again and self._failures[fkey] < self.max_failures:
                delay = 0.25 * 2 ** self._failures[fkey]
                self._retry_at[key] = self.bb.now_ms() / 1000 + delay
                log.warning(
                    "edge %s -> %s failed (%s); retry in %.1fs", edge.id, target, exc, delay
                )
                return
            reason = f"{type(exc).__name__}: {exc}"[:2000]
            log.error("edge %s -> %s: batch to the DLQ: %s", edge.id, target, reason)
            await self._take(part, key, raw, "dlq", reason, edge.id, target)
            self.counters.dead_lettered += len(raw)
            self._failures.pop(fkey, None)
            self._retry_at.pop(key, None)
            return
        if self.crash_window_ms:
            await asyncio.sleep(self.crash_window_ms / 1000)
        await self._take(part, key, raw, "trim", "", edge.id, target)
        self.counters.fired += 1

    async def _consolidate(
        self, edge: MemorySubscription, target: str, entries: list[Entry], now_ms: int
    ) -> None:
        """Run the transformer on a batch and write its drafts; traced, in the trace of the
        first traced source, linked to the others (:func:`blackboard.tracing.fan_in`)."""
        if tracing.ENABLED and any(e.traceparent for e in entries):
            with tracing.fan_in("dataflow.fire", [e.traceparent for e in entries], {
                "blackboard.role": self.role, "blackboard.edge": edge.id,
                "blackboard.target": target, "blackboard.entries": len(entries),
            }):
                await self._write(target, await self.transform(edge, target, entries, now_ms))
            return
        await self._write(target, await self.transform(edge, target, entries, now_ms))

    async def _load(self, partition: int, items: list[BufferItem]) -> list[Entry]:
        """Re-read the entries the items name (once each, in buffer order; deleted ones skipped).

        A bus event is a hint: a forged one may name no valid scope or id, or a scope of
        another partition. Such items are skipped rather than failing (and dead-lettering)
        the real items batched with them.
        """
        refs = list(dict.fromkeys(EntryRef(it.scope, it.entry_id) for it in items))
        # Retained: an entry evicted or expired since it was buffered is still consolidated.
        found = await self.bb.reads.fetch(partition, refs, skip_invalid=True, retained=True)
        return [e for e in found if e is not None]

    async def _write(self, target: str, requests: Sequence[WriteRequest]) -> None:
        if not requests:
            return
        written = await self.bb.scope(target).write_many(requests)
        self.counters.written += len(written)

    async def _take(
        self,
        part: PendingBuffer,
        key: str,
        raw: list[bytes],
        mode: str,
        reason: str,
        edge_id: str,
        target: str,
    ) -> None:
        await part.take(key, raw, mode, reason, edge_id, target, DLQ_MAXLEN)
