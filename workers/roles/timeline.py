"""The ``timeline`` role: keeps the tables of contents of the scopes its edges name
(:mod:`consolidation.toc`), from the events.

It reads the partition buses through its consumer group, as every consuming role does
(partition leases, claims of what a dead owner left pending, the DLQ after
``max_deliveries``), but places each batch's entries straight from the read and then acks
it: no edge buffer between the bus and the table. An edge runner pays per event for a
buffer script, a durable in-flight batch, a trim and a re-read in batches of the edge's
trigger; placing needs none of them, because the table itself says what is placed
(``toc.lua`` writes the placements and the nodes in one compare-and-set call). So a crash
before the ack re-delivers the events and the replay finds them placed and changes
nothing; events written while no worker runs wait in the group, as for any role.

The edges name the scopes (their source pattern and filter); their trigger is not used:
a batch is what one read returns (up to :data:`READ_COUNT` events of a partition).
Only ``written`` events are placed (an updated entry is the same entry, already placed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from blackboard import Batch, Entry, EntryRef, EventType
from blackboard.errors import OutOfMemory
from consolidation.toc import apply_entries, timeline
from memory.subscriptions import MemorySubscription

from ..dataflow import DLQ_MAXLEN, BufferItem
from ..edgeset import EdgeSet
from ..oom import OomNotice
from ..streams import FailureStreak, bus_options, reopen_until_stopped
from .registry import RoleHost, RoleSpec

__all__ = ["SPECS", "TimelineRole"]

log = logging.getLogger(__name__)

#: What placing an entry reads of it (:func:`consolidation.toc.plan`: its time, text,
#: tags and actors).
PLACE_FIELDS = ("id", "scope", "value", "tags", "metadata", "created_at", "author")
#: Events read per partition at most: the table's nodes are read and written once per
#: scope and read, so a large read spreads that over many entries.
READ_COUNT = 1000


@dataclass
class TimelineCounters:
    """Events read, entries placed, batches that failed (re-delivered) and handled."""

    events: int = 0
    placed: int = 0
    errors: int = 0
    batches: int = 0


class TimelineRole:
    """Consume the buses and place the entries of the timeline edges' scopes."""

    def __init__(self, host: RoleHost) -> None:
        self.host = host
        self.streak = FailureStreak()
        self.edge_set = EdgeSet(host.registry, frozenset({timeline.name}))
        self.stats = TimelineCounters()
        self._readers_changed = asyncio.Event()
        self._owned_changed = asyncio.Event()
        self._adopt_failures: dict[str, int] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._oom = OomNotice(f"{host.role} placing", host.settings.oom_say_every_s)

    async def start(self) -> None:
        await self.edge_set.reload()
        self._tasks = [asyncio.create_task(self._consume_loop(), name=f"{self.host.id}-consume"),
                       asyncio.create_task(self._adopt_loop(), name=f"{self.host.id}-adopt")]

    async def stop(self) -> None:
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t

    def counters(self) -> dict[str, int]:
        s = self.stats
        return {"events": s.events, "placed": s.placed, "errors": s.errors,
                "fired": s.batches,
                # the readers move an event that keeps failing to the DLQ
                "dead_lettered": self.host.consume_counters.over_delivered}

    def failing_for(self) -> float:
        return self.streak.failing_for()

    def partitions_changed(self) -> None:
        self._readers_changed.set()
        self._owned_changed.set()

    async def _adopt_loop(self) -> None:
        """Place what edge buffers hold for the timeline edges: items an edge runner
        buffered (and acked off the bus) before this role read the buses itself, after an
        upgrade or beside an older worker. Once for each partition as it is taken."""
        adopted: set[int] = set()
        while not self.host.stopping.is_set():
            owned = set(self.host.leases.owned)
            adopted &= owned
            for p in sorted(owned - adopted):
                try:
                    await self._adopt(p)
                    adopted.add(p)
                except Exception:
                    log.exception("could not place the buffered items of partition %d; "
                                  "tried again shortly", p)
            self._owned_changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._owned_changed.wait(),
                                       self.host.settings.trigger_check_ms / 1000)

    async def _adopt(self, partition: int) -> int:
        part = self.host.bb.pending(partition)
        n = 0
        for key in await part.keys():
            edge_id, target = part.parse(key)
            if self.edge_set.get(edge_id) is None:
                continue  # another role's buffer
            while raw := await part.head(key, READ_COUNT):
                items = [BufferItem.decode(r) for r in raw]
                wanted: dict[str, list[str]] = {}
                for it in items:
                    wanted.setdefault(it.scope, []).append(it.entry_id)
                _, failed = await self._place_all(partition, wanted)
                mode, reason = "trim", ""
                if failed:
                    self._adopt_failures[key] = self._adopt_failures.get(key, 0) + 1
                    reason = f"placing failed for {', '.join(sorted(failed))}"[:2000]
                    if self._adopt_failures[key] < self.host.settings.max_failures:
                        raise RuntimeError(reason)
                    mode = "dlq"  # as an edge runner's batch that keeps failing
                    log.error("buffered items of %s to the DLQ: %s", key, reason)
                self._adopt_failures.pop(key, None)
                await part.take(key, raw, mode, reason, edge_id, target, DLQ_MAXLEN)
                n += len(raw)
        if n:
            log.info("placed %d items an edge runner had buffered in partition %d", n,
                     partition)
        return n

    async def _consume_loop(self) -> None:
        """Consume until stopped, as the edge runner does
        (:func:`~workers.streams.reopen_until_stopped`)."""
        await reopen_until_stopped(
            self._consume_once, self.streak, self.host.stopping, self.host.sleep, log,
            on_oom=lambda: self._oom.say("the events wait, pending, until memory is freed"))

    async def _consume_once(self) -> None:
        h = self.host
        # Placing is idempotent, so a new owner may take over what a retiring reader holds
        # at once (bus_options): whichever places first wins, the other finds it placed.
        opts = bus_options(h, max(h.settings.batch_count, READ_COUNT))
        await h.bb.handle_batches(h.role, h.id, self._place, h.stopping, h.leases.current,
                                  opts, changed=self._readers_changed,
                                  counters=h.consume_counters)

    def _wanted(self, batch: Batch) -> dict[str, list[str]]:
        """scope -> ids of the batch's written entries that a timeline edge takes."""
        edges = self.edge_set.edges
        out: dict[str, list[str]] = {}
        # A read holds a few scopes' events: each scope is matched against the edges'
        # source patterns once (``accepts`` per event ran a regex for each), then only
        # the per-event half of ``accepts`` (``admits``) is checked.
        matching: dict[str, list[MemorySubscription]] = {}
        for ev in batch.events:
            if ev.type is not EventType.WRITTEN:
                continue
            if (es := matching.get(ev.scope)) is None:
                es = matching[ev.scope] = [e for e in edges if e.match(ev.scope) is not None]
            if any(e.admits(ev.tags, ev.at) for e in es):
                out.setdefault(ev.scope, []).append(ev.entry_id)
        return out

    async def _place(self, batch: Batch) -> None:
        try:
            # The edges as of now: an edge added before these events were written has
            # moved the version by then (one round trip per read).
            await self.edge_set.check()
            wanted = self._wanted(batch)
            placed, failed = (await self._place_all(batch.partition, wanted) if wanted
                              else (0, set()))
            if self.host.settings.crash_window_ms:  # a test's kill -9 lands here
                await asyncio.sleep(self.host.settings.crash_window_ms / 1000)
            if failed:
                # Only the failing scopes' events stay pending (re-delivered, to the DLQ
                # after max_deliveries): one agent's bad entry holds no other's back.
                ok = [ev for ev in batch.events if ev.scope not in failed]
                if ok:
                    await batch.ack(ok)
                self.stats.errors += 1
                self.stats.placed += placed
                return
            await batch.ack()
        except OutOfMemory:
            self._oom.say("the events wait, pending, until memory is freed")
            batch.defer()
            return
        except Exception:
            self.stats.errors += 1
            log.exception("batch on partition %d failed; it stays pending", batch.partition)
            return  # released: re-delivered, to the DLQ after max_deliveries
        self.stats.events += len(batch.events)
        self.stats.placed += placed
        self.stats.batches += 1
        self.host.batches += 1
        self.streak.succeeded()

    async def _place_all(self, partition: int,
                         wanted: dict[str, list[str]]) -> tuple[int, set[str]]:
        """Place the entries ``wanted`` names, scope by scope; -> (placed, the scopes whose
        placing failed, logged)."""
        refs = [EntryRef(s, i) for s, ids in wanted.items() for i in ids]
        # retained: an entry evicted or expired since it was written is placed too
        found = await self.host.bb.reads.fetch(partition, refs, skip_invalid=True,
                                               retained=True, fields=PLACE_FIELDS)
        by_scope: dict[str, list[Entry]] = {}
        for e in found:
            if e is not None:
                by_scope.setdefault(e.scope, []).append(e)
        placed, failed = 0, set()
        for scope, es in sorted(by_scope.items()):
            try:
                placed += await apply_entries(self.host.bb, scope, es)
            except OutOfMemory:
                raise
            except Exception:
                log.exception("placing %d entries of %s failed; they stay pending",
                              len(es), scope)
                failed.add(scope)
        return placed, failed


def _factory() -> Callable[[RoleHost], TimelineRole]:
    return TimelineRole


SPECS: tuple[RoleSpec, ...] = (
    RoleSpec("timeline", _factory(), consumes=True, transformers=frozenset({timeline.name})),
)
