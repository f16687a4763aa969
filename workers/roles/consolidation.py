"""The consolidation edge runner role: buffers the events its edges match and fires the
edges' transformers (one role per transformer role of the consolidation registry)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from dataclasses import asdict
from typing import Any

from blackboard import Batch
from blackboard.errors import OutOfMemory
from consolidation.transformer import compares_entries, reads_updates, transformer_roles
from retrieval.embedders import Embedder, default_embedder

from ..dataflow import DataflowRunner
from ..edgeset import EdgeSet
from ..firing import FireLoops
from ..llm import transformer_llm
from ..oom import OomNotice
from ..streams import FailureStreak, bus_options, reopen_until_stopped
from ..transform import TransformBridge
from .registry import RoleHost, RoleSpec

__all__ = ["SPECS", "EdgeRunnerRole"]

log = logging.getLogger(__name__)


def _embedder_for(transformers: frozenset[str]) -> Embedder | None:
    """The installed embedder when a transformer of the role compares entries by meaning
    (it loads on first use): other roles neither need it nor warn of its absence."""
    return default_embedder() if any(compares_entries(t) for t in transformers) else None


class EdgeRunnerRole:
    """Consume the buses into the edges' buffers; fire loops flush them through the
    transformers. ``transformers`` are the ones whose edges this role runs."""

    def __init__(
        self, host: RoleHost, transformers: frozenset[str], bridge: TransformBridge | None = None
    ) -> None:
        self.host = host
        self.streak = FailureStreak()
        self.edge_set = EdgeSet(host.registry, transformers)
        self.runner = DataflowRunner(
            host.bb,
            host.role,
            self.edge_set,
            bridge or TransformBridge(host.bb, llm=transformer_llm(host.settings, host.role),
                                      embedder=_embedder_for(transformers)),
            max_failures=host.settings.max_failures,
            crash_window_ms=host.settings.crash_window_ms,
            # Stopping ends firing after the batch in hand, as losing the lease does.
            owns=lambda p: p in host.leases.owned and not host.stopping.is_set(),
            oom_say_every_s=host.settings.oom_say_every_s,
            updates=lambda edge: reads_updates(edge.transformer),
            turn_ttl_ms=host.settings.lease_ttl_ms,
        )
        self.fires = FireLoops(
            host.bb,
            self.runner,
            self.edge_set,
            lambda: host.leases.owned,
            host.stopping,
            host.settings.trigger_check_ms,
            host.id,
            host.settings.oom_say_every_s,
        )
        self._readers_changed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._oom = OomNotice(f"{host.role} buffering", host.settings.oom_say_every_s)

    async def start(self) -> None:
        # This role's edges (with the edges version of every partition).
        await self.edge_set.reload()
        loops: list[Callable[[], Coroutine[Any, Any, None]]] = [
            self._edges_loop, self._consume_loop, self.fires.run
        ]
        self._tasks = [
            asyncio.create_task(f(), name=f"{self.host.id}-{f.__name__}") for f in loops
        ]

    async def stop(self) -> None:
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        llm = getattr(self.runner.transform, "llm", None)
        if llm is not None and hasattr(llm, "aclose"):
            await llm.aclose()

    def counters(self) -> dict[str, int]:
        return asdict(self.runner.counters)

    def failing_for(self) -> float:
        return self.streak.failing_for()

    def partitions_changed(self) -> None:
        # Readers and fire loops follow the new set now, not at their next poll.
        self._readers_changed.set()
        self.fires.changed.set()

    async def _edges_loop(self) -> None:
        """A slow backstop only: buffering and firing check the edges version themselves
        (:mod:`workers.edgeset`), so a new or removed edge applies at once without it, and a
        changed trigger at the buffer's next item. What it adds: a buffer left waiting on a
        count trigger is looked at again under the changed one without a new item."""
        while await self.host.sleep(self.host.settings.edges_refresh_ms):
            try:
                if await self.edge_set.check():
                    for p in list(self.fires.due):
                        self.fires.wake(p)
            except Exception:
                log.exception("could not check the edges version; keeping the loaded edges")

    async def _consume_loop(self) -> None:
        """Consume until stopped (:func:`~workers.streams.reopen_until_stopped`); Redis out
        of memory waits, the partitions kept."""
        await reopen_until_stopped(
            self._consume_once, self.streak, self.host.stopping, self.host.sleep, log,
            on_oom=lambda: self._oom.say("reading waits until memory is freed"))

    async def _consume_once(self) -> None:
        h = self.host
        # Claiming from another consumer is safe here even while it is alive: buffer.lua
        # appends only events still pending for the caller, so the slower one appends
        # nothing (bus_options: a new owner takes over at once).
        opts = bus_options(h, h.settings.batch_count)
        # Each partition's reader buffers its own batches: one round trip per batch, and
        # the partitions' round trips overlap instead of queueing behind one another.
        await h.bb.handle_batches(
            h.role,
            h.id,
            self._buffer,
            h.stopping,
            h.leases.current,
            opts,
            changed=self._readers_changed,
            counters=h.consume_counters,
        )

    async def _buffer(self, batch: Batch) -> None:
        try:
            keys = await self.runner.buffer(batch.partition, self.host.id, batch.events)
        except OutOfMemory:
            self._oom.say("the bus events wait, pending, until memory is freed")
            batch.defer()  # nothing was appended; no failure counted
            return
        except Exception:
            log.exception("batch on partition %d failed; it stays pending", batch.partition)
            return  # released: re-delivered after a backoff
        batch.mark_acked()  # buffer.lua acked the events with their append
        self.host.batches += 1
        self.streak.succeeded()
        if keys:
            # Firing runs in the partition's fire loop, so buffering only appends and
            # acks: events never wait in memory long enough to be claimed by others.
            self.fires.wake(batch.partition)


def _factory(transformers: frozenset[str]) -> Callable[[RoleHost], EdgeRunnerRole]:
    return lambda host: EdgeRunnerRole(host, transformers)


#: Roles with edges that are not edge runners (registered by their own modules).
OWN_BRIDGE = frozenset({"timeline"})

#: One edge runner per transformer role of the consolidation registry.
SPECS: tuple[RoleSpec, ...] = tuple(
    RoleSpec(role, _factory(names), consumes=True, transformers=names)
    for role, names in transformer_roles().items() if role not in OWN_BRIDGE
)
