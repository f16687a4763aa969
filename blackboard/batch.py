"""What a consumer receives and settles: batches of bus events, options, dead letters.

A :class:`Batch` is acked once its effect is durable, released to be re-delivered, or has
an event moved to the partition's DLQ (:class:`blackboard.bus.Bus` owns the groups and the
DLQ).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Protocol

from .entry import Event

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = [
    "Batch",
    "BatchSink",
    "ConsumeCounters",
    "ConsumeOptions",
    "PartitionProgress",
    "PartitionSource",
]

PartitionSource = Iterable[int] | Callable[[], Iterable[int]] | None


@dataclass(frozen=True, slots=True)
class ConsumeOptions:
    """Tuning of a consumer. Times are ms."""

    count: int = 100
    block_ms: int = 1000
    claim_idle_ms: int = 30_000
    claim_every_ms: int = 5_000
    #: Idle time above which a reader that just took a partition claims others' pending
    #: events (None: ``claim_idle_ms``). 0 suits consumers whose effect checks ownership
    #: (the workers' buffer script): the previous owner's in-hand batch moves over at once.
    takeover_idle_ms: int | None = None
    max_deliveries: int = 5
    rebalance_every_ms: int = 1_000
    dlq_maxlen: int = 100_000
    #: How long after a reader starts it keeps claiming every ``claim_every_ms`` (None:
    #: for as long as it runs). Consumers that own their partitions by lease need claims
    #: only after taking one over: what the previous owner left pending, and what it read
    #: in the moments before it noticed the loss. After the window the reader only blocks.
    claim_window_ms: int | None = None


@dataclass
class ConsumeCounters:
    """What readers skipped or dropped instead of delivering (each is also logged)."""

    #: events gone from the bus while pending (trimmed or deleted): nothing to deliver
    gone: int = 0
    #: undecodable (forged or corrupt) events moved to the DLQ
    undecodable: int = 0
    #: events moved to the DLQ after ``max_deliveries``
    over_delivered: int = 0
    #: events claimed from other consumers of the group
    claimed: int = 0
    #: re-driven events meant for another group, acked unhandled
    not_ours: int = 0
    #: Each partition's reader's last progress (not a counter: :meth:`totals` leaves it out).
    progress: dict[int, PartitionProgress] = field(default_factory=dict, compare=False)

    def totals(self) -> dict[str, int]:
        """The counters (every int field)."""
        return {k: v for k, v in asdict(self).items() if isinstance(v, int)}

    def started(self, partition: int, now_ms: int) -> PartitionProgress:
        """A reader of ``partition`` starts: its progress is counted from now."""
        self.progress[partition] = PartitionProgress(time.monotonic(), now_ms)
        return self.progress[partition]


@dataclass
class PartitionProgress:
    """When the reader of one partition last made progress: a read that returned (an idle
    reader's block ends every ``block_ms``) or a batch settled. ``last`` is monotonic
    seconds (for the stall check), ``last_ms`` the Redis clock (for people), ``events``
    the events it handled and acked."""

    last: float
    last_ms: int
    events: int = 0
    #: Set by whoever judged it stalled: the reader pool retires this reader at its next
    #: rebalance and starts a fresh one if the partition is still owned.
    stalled: bool = False

    def moved(self, now_ms: int, events: int = 0) -> None:
        self.last, self.last_ms = time.monotonic(), now_ms
        self.events += events


@dataclass(eq=False)
class Batch:
    """Events of one partition delivered to one consumer; ack them once their effect is durable."""

    role: str
    consumer: str
    partition: int
    events: list[Event]
    _bb: Blackboard = field(repr=False)
    _done: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    acked: bool = False
    #: the handler could not run for a reason that is not the events' (Redis over its
    #: maxmemory): the reader hands the same events again after a backoff, counting neither
    #: a failure nor a delivery, so waiting for memory never dead-letters anything
    deferred: bool = False
    reader: object = field(default=None, repr=False, compare=False)
    #: ids acked by a partial :meth:`ack` (the rest left pending): not counted as failed
    acked_ids: set[str] = field(default_factory=set, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.events)

    async def ack(self, events: Iterable[Event] | None = None) -> int:
        """Acknowledge the given events (default: all); the reader then moves on."""
        ids = [e.id for e in (self.events if events is None else events)]
        n = await self._bb.bus(self.partition).ack(self.role, ids)
        self.acked_ids.update(ids)
        if events is None:
            self.acked = True
            self._done.set()
        return n

    def mark_acked(self) -> None:
        """The events were acked by a script (e.g. ``buffer.lua``, with their effect)."""
        self.acked = True
        self._done.set()

    def release(self) -> None:
        """Leave un-acked events pending (they are re-delivered, counting a delivery)."""
        self._done.set()

    def defer(self) -> None:
        """Hand the events again later, as they are, counting no failure (see ``deferred``)."""
        self.deferred = True
        self._done.set()

    async def dead_letter(self, event: Event, reason: str) -> bool:
        """Move one event to the DLQ now, with ``reason``, and ack it."""
        return await self._bb.bus(self.partition).dead_letter(self.role, event, -1, reason)


class BatchSink(Protocol):
    """Where a reader hands its batches (and its fatal error)."""

    async def put(self, item: Batch | BaseException) -> None: ...
