"""A worker process: one role, partition leases, the consume loop, heartbeats, metrics.

Lifecycle verbs as in dramatiq: :meth:`Worker.start` (in a running loop),
:meth:`Worker.stop` (finish the batch in hand, release leases, stop heartbeating) and
:meth:`Worker.join`. :func:`workers.process.run_worker` runs workers in a process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import asdict
from typing import Any

from blackboard import Batch, Blackboard, ConsumeOptions
from blackboard.consumer import ConsumeCounters
from blackboard.serve import serve
from consolidation.llm.openai import OpenAIClient
from memory.registry import Registry
from memory.subscriptions import MemorySubscription

from .dataflow import DataflowRunner
from .edgeset import EdgeSet
from .firing import FireLoops
from .heartbeat import Heartbeat
from .indexer import IndexRole, bind_reembed
from .leases import LeaseSet, LeaseSnapshot, LeaseTable, TableClock
from .maintenance import Maintenance
from .settings import CONSUMING_ROLES, ROLES, WorkerSettings
from .streams import FailureStreak
from .transform import ROLE_TRANSFORMERS, TransformBridge

__all__ = ["Worker", "llm_client"]

log = logging.getLogger(__name__)


def llm_client(settings: WorkerSettings) -> OpenAIClient | None:
    """The transformers' LLM client when an endpoint is configured, else None (LLM-free)."""
    if settings.llm_base_url is None or settings.llm_model is None:
        return None
    return OpenAIClient(
        settings.llm_base_url,
        settings.llm_model,
        api_key=settings.llm_api_key,
        rate=settings.llm_rate,
        token_budget=settings.llm_token_budget,
    )


class Worker:
    """Runs one role. ``role`` is one of :data:`workers.settings.ROLES`."""

    def __init__(
        self,
        bb: Blackboard,
        role: str,
        settings: WorkerSettings | None = None,
        worker_id: str | None = None,
        bridge: TransformBridge | None = None,
        registry: Registry | None = None,
        clock: TableClock | None = None,
    ) -> None:
        """``registry`` and ``clock`` are the process's, shared by its roles (one
        connection pool, one lease-table beat); a worker without them makes its own."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; roles: {', '.join(ROLES)}, all")
        self.bb, self.role = bb, role
        self.settings = settings or WorkerSettings.from_env()
        self.id = worker_id or f"{role}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.leases = LeaseSet(bb, role, self.id, self.settings.lease_ttl_ms)
        self.heartbeat = Heartbeat(bb, self.id, role, self.settings.heartbeat_ms)
        self._own_registry = registry is None
        self.registry = registry if registry is not None else Registry(bb)
        self._clock = clock
        self._started = False
        #: Roles that read buses hold partition leases; the others only announce themselves.
        self.holds_leases = role in CONSUMING_ROLES
        self.consume_counters = ConsumeCounters()
        self.streak = FailureStreak()
        self._last_tick = time.monotonic()
        self._ticks = 0
        self.edge_set = EdgeSet(self.registry, ROLE_TRANSFORMERS.get(role, frozenset()))
        self.runner = DataflowRunner(
            bb,
            role,
            self.edge_set,
            bridge or TransformBridge(bb, llm=llm_client(self.settings)),
            max_failures=self.settings.max_failures,
            crash_window_ms=self.settings.crash_window_ms,
            # Stopping ends firing after the batch in hand, as losing the lease does.
            owns=lambda p: p in self.leases.owned and not self._stopping.is_set(),
        )
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._scheduler: Any = None
        self.maintenance = (
            Maintenance(bb, self.id, self.settings) if role == "maintenance" else None
        )
        self.index_role = (
            IndexRole(
                bb,
                self.id,
                partitions=self.leases.current,
                count=self.settings.batch_count,
                block_ms=self.settings.block_ms,
                claim_idle_ms=self.settings.claim_idle_ms,
                max_deliveries=self.settings.max_deliveries,
                claim_window_ms=self.claim_window_ms(),
                counters=self.consume_counters,
            )
            if role == "index"
            else None
        )
        self.batches = 0
        self._readers_changed = asyncio.Event()
        self.fires = FireLoops(
            bb,
            self.runner,
            self.edge_set,
            lambda: self.leases.owned,
            self._stopping,
            self.settings.trigger_check_ms,
            self.id,
        )
        self._fires_changed = self.fires.changed

    # -- state ----------------------------------------------------------------------------

    def edges(self) -> list[MemorySubscription]:
        return self.edge_set.edges

    async def refresh_edges(self) -> None:
        """Load this role's edges (with the edges version of every partition)."""
        if self.role in ROLE_TRANSFORMERS:
            await self.edge_set.reload()

    async def ensure_groups(self) -> None:
        """This role's consumer group, and the group of every role an edge needs.

        Created when the edge exists, not when its role's first worker starts: the bus trim
        point and the dataflow hold (the flowmark) wait for every group, so a role whose
        workers start late still finds each event and each evicted entry it needs.
        """
        edges = await self.registry.list_edges()
        used = {e.transformer for e in edges}
        wanted = {r for r, ts in ROLE_TRANSFORMERS.items() if ts & used}
        await self.bb.ensure_groups(sorted(wanted | {self.role}))

    def counters(self) -> dict[str, int]:
        c = asdict(self.runner.counters)
        c["batches"] = self.batches
        c["partitions"] = len(self.leases.owned)
        c.update({f"consume_{k}": v for k, v in asdict(self.consume_counters).items()})
        if self.index_role is not None:
            c.update(self.index_role.counters())
        if self.maintenance is not None:
            c.update(self.maintenance.counters())
        # The process's relay loops (blackboard.relay), shared by its roles.
        c.update({f"relay_{k}": v for k, v in asdict(self.bb.relays.counters).items()})
        return c

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the background loops; returns once they run."""
        if self.role in CONSUMING_ROLES:
            await self.ensure_groups()
        await self.refresh_edges()
        # Announce this worker (its first lease-table tick writes its beat), but take
        # partitions only on the next tick, one heartbeat later: workers started together
        # then see each other and split the partitions at once, instead of one taking all
        # and handing half over a tick later.
        await self.heartbeat.beat(set(), self.counters())
        if self._clock is None:
            self._clock = TableClock(LeaseTable(self.bb), self.settings.heartbeat_ms)
        if self.holds_leases:
            self._clock.table.join(self.role, self.id)
        self._clock.start()
        self._started = True
        if self.index_role is not None:
            await self.index_role.start()
        if self.maintenance is not None:
            from retrieval.embedders import default_embedder

            emb = default_embedder()
            if emb is not None:  # no dense model installed: nothing to re-embed with
                self.maintenance.reembed = bind_reembed(self.bb, emb)
                self.maintenance.embedder_name = emb.name
        loops: list[Callable[[], Coroutine[Any, Any, None]]] = [self._lease_loop, self._edges_loop]
        if self.role in ROLE_TRANSFORMERS:
            loops += [self._consume_loop, self.fires.run]
        self._tasks = [asyncio.create_task(f(), name=f"{self.id}-{f.__name__}") for f in loops]
        if self.maintenance is not None:
            from apscheduler.schedulers.asyncio import AsyncIOScheduler

            self._scheduler = AsyncIOScheduler()
            self.maintenance.schedule(self._scheduler)
            self._scheduler.start()
        log.info("worker %s started (role %s)", self.id, self.role)

    async def stop(self) -> None:
        """Finish the batch in hand, release the leases, remove the heartbeat.

        Each step runs even if an earlier one failed (Redis gone): a worker told to stop
        stops; what it could not release lapses ``lease_ttl_ms`` later."""
        self._stopping.set()
        steps: list[tuple[str, Callable[[], Coroutine[Any, Any, None]]]] = []
        if self.index_role is not None:
            steps.append(("index role", self.index_role.stop))
        if self._scheduler is not None:
            # No new runs; the runs in hand finish their partition before the scheduler
            # shuts down (its shutdown cancels them mid-command).
            self._scheduler.pause()
            scheduler = self._scheduler

            async def shutdown() -> None:
                scheduler.shutdown(wait=False)

            if self.maintenance is not None:
                steps.append(("maintenance", self.maintenance.drain))
            steps.append(("scheduler", shutdown))
        steps += [("loops", self.join), ("leases", self.leases.release_all)]
        if self._clock is not None and self._started:
            clock = self._clock
            steps += [("lease table", lambda: clock.table.leave(self.role, self.id)),
                      ("lease clock", clock.stop)]
        steps.append(("heartbeat", self.heartbeat.stop))
        if self._own_registry:
            steps.append(("registry", self.registry.aclose))
        llm = getattr(self.runner.transform, "llm", None)
        if llm is not None and hasattr(llm, "aclose"):
            steps.append(("llm client", llm.aclose))
        for what, step in steps:
            try:
                await step()
            except Exception:
                log.exception("worker %s: stopping its %s failed; going on", self.id, what)
        log.info("worker %s stopped", self.id)

    async def join(self) -> None:
        """Wait for the loops to end (they end after :meth:`stop` is requested)."""
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t

    async def _sleep(self, ms: int) -> bool:
        """Sleep unless stopping; True when the worker should go on."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), ms / 1000)
        return not self._stopping.is_set()

    # -- loops ----------------------------------------------------------------------------

    def claim_window_ms(self) -> int:
        """How long a reader that took a partition over claims what others left pending:
        until the previous owner has surely noticed the loss (its lease lapsed and it
        ticked) and what it read meanwhile has idled ``claim_idle_ms``."""
        s = self.settings
        return s.lease_ttl_ms + 2 * s.heartbeat_ms + 2 * s.claim_idle_ms

    def healthy(self) -> bool:
        """False once this role's consuming has failed for a lease TTL without a success:
        it then gives its partitions up so that a worker that can run them takes them."""
        failing = self.streak.failing_for()
        if self.index_role is not None:
            failing = max(failing, self.index_role.streak.failing_for())
        return failing < self.settings.lease_ttl_ms / 1000

    async def _tick_leases(self, snap: LeaseSnapshot) -> None:
        before = self.leases.current()
        self._ticks += 1
        if not self.holds_leases or self._ticks == 1:
            pass  # the first tick only announces the beat (see start)
        elif self.healthy():
            await self.leases.rebalance(snap, 3 * self.settings.heartbeat_ms)
        elif before:
            log.error("worker %s cannot consume; releasing its partitions", self.id)
            await self.leases.release_all()
        changed = self.leases.current() != before
        await self.heartbeat.beat(self.leases.current(), self.counters(), force=changed)
        if changed:
            # Readers and fire loops follow the new set now, not at their next poll.
            self._readers_changed.set()
            self._fires_changed.set()

    async def _lease_loop(self) -> None:
        """Follow the process's lease-table ticks (one beat, one read for all roles)."""
        assert self._clock is not None
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            while not self._stopping.is_set():
                tick = asyncio.ensure_future(self._clock.next())
                await asyncio.wait({tick, stop}, return_when=asyncio.FIRST_COMPLETED)
                if not tick.done():
                    tick.cancel()
                    return
                try:
                    await self._tick_leases(tick.result())
                    self._last_tick = time.monotonic()
                except Exception:
                    log.exception("lease/heartbeat tick failed; retrying")
                    # Unsure what the table says: after a lease TTL others may hold them.
                    if time.monotonic() - self._last_tick > self.settings.lease_ttl_ms / 1000:
                        self.leases.drop_all("no lease tick for a lease TTL")
                        self._readers_changed.set()
                        self._fires_changed.set()
        finally:
            stop.cancel()

    async def _edges_loop(self) -> None:
        """A slow backstop only: buffering and firing check the edges version themselves
        (:mod:`workers.edgeset`), so a new or removed edge applies at once without it, and a
        changed trigger at the buffer's next item. What it adds: a buffer left waiting on a
        count trigger is looked at again under the changed one without a new item."""
        if self.role not in ROLE_TRANSFORMERS:
            return
        while await self._sleep(self.settings.edges_refresh_ms):
            try:
                if await self.edge_set.check():
                    for p in list(self._due):
                        self._wake(p)
            except Exception:
                log.exception("could not check the edges version; keeping the loaded edges")

    async def _consume_loop(self) -> None:
        """Consume until stopped; a failed stream (Redis unreachable, a reader's error) is
        logged and reopened after a backoff, never left dead while the leases are renewed."""
        backoff = 0.1
        while not self._stopping.is_set():
            self.streak.running()
            try:
                await self._consume_once()
                backoff = 0.1
            except Exception:
                if self.streak.failed():
                    backoff = 0.1
                log.exception("consume loop failed; reopening in %.1fs", backoff)
                if not await self._sleep(int(backoff * 1000)):
                    return
                backoff = min(backoff * 2, 5.0)

    async def _consume_once(self) -> None:
        s = self.settings
        # Claiming from another consumer is safe here even while it is alive: buffer.lua
        # appends only events still pending for the caller, so the slower one appends
        # nothing. That lets a new partition owner take over events a retiring reader
        # received during the handover within a second, instead of waiting minutes.
        opts = ConsumeOptions(
            count=s.batch_count,
            block_ms=s.block_ms,
            claim_idle_ms=s.claim_idle_ms,
            claim_every_ms=min(s.claim_idle_ms, 1_000),
            claim_window_ms=self.claim_window_ms(),
            takeover_idle_ms=0,
            max_deliveries=s.max_deliveries,
        )
        # Each partition's reader buffers its own batches: one round trip per batch, and
        # the partitions' round trips overlap instead of queueing behind one another.
        await serve(
            self.bb,
            self.role,
            self.id,
            self._buffer,
            self._stopping,
            self.leases.current,
            opts,
            changed=self._readers_changed,
            counters=self.consume_counters,
        )

    async def _buffer(self, batch: Batch) -> None:
        try:
            keys = await self.runner.buffer(batch.partition, self.id, batch.events)
        except Exception:
            log.exception("batch on partition %d failed; it stays pending", batch.partition)
            return  # released: re-delivered after a backoff
        batch.mark_acked()  # buffer.lua acked the events with their append
        self.batches += 1
        self.streak.succeeded()
        if keys:
            # Firing runs in the partition's fire loop, so buffering only appends and
            # acks: events never wait in memory long enough to be claimed by others.
            self._wake(batch.partition)

    def _wake(self, p: int) -> None:
        self.fires.wake(p)

    @property
    def _due(self) -> dict[int, asyncio.Event]:
        """The owned partitions' wake-up events (see :class:`workers.firing.FireLoops`)."""
        return self.fires.due
