"""A worker process: one role, partition leases, the consume loop, heartbeats, metrics.

Lifecycle verbs as in dramatiq: :meth:`Worker.start` (in a running loop),
:meth:`Worker.stop` (finish the batch in hand, release leases, stop heartbeating) and
:meth:`Worker.join`. :func:`run_worker` runs one in the current process until SIGTERM or
SIGINT and returns 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import asdict
from typing import Any

from blackboard import Batch, Blackboard, ConsumeOptions
from blackboard.serve import serve
from consolidation.llm.openai import OpenAIClient
from memory.registry import Registry
from memory.subscriptions import MemorySubscription

from .dataflow import DataflowRunner
from .edgeset import EdgeSet
from .heartbeat import Heartbeat, live_workers
from .indexer import IndexRole, bind_reembed
from .leases import LeaseSet
from .maintenance import Maintenance
from .metrics import MetricsServer, render_metrics
from .relay import RelayRole
from .settings import CONSUMING_ROLES, ROLES, WorkerSettings
from .transform import ROLE_TRANSFORMERS, TransformBridge

__all__ = ["Worker", "run_worker"]

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
        relay: bool | None = None,
    ) -> None:
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; roles: {', '.join(ROLES)}, all")
        self.bb, self.role = bb, role
        self.settings = settings or WorkerSettings.from_env()
        self.id = worker_id or f"{role}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.leases = LeaseSet(bb, role, self.id, self.settings.lease_ttl_ms)
        self.heartbeat = Heartbeat(bb, self.id, role, self.settings.heartbeat_ms)
        self.registry = Registry(bb)
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
        self._metrics: MetricsServer | None = None
        self._scheduler: Any = None
        self.maintenance = (
            Maintenance(bb, self.id, self.settings) if role == "maintenance" else None
        )
        # One relay per process is enough (``_serve`` gives it to the first consuming role):
        # it moves the inbox items of this worker's partitions to the buses.
        self.relay = (
            RelayRole(bb, self.leases.current)
            if (role in CONSUMING_ROLES if relay is None else relay)
            else None
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
            )
            if role == "index"
            else None
        )
        self.batches = 0
        self._due: dict[int, asyncio.Event] = {}
        self._readers_changed = asyncio.Event()
        self._fires_changed = asyncio.Event()

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
        if self.relay is not None:
            c.update({f"relay_{k}": v for k, v in asdict(self.relay.counters).items()})
        return c

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the background loops; returns once they run."""
        if self.role in CONSUMING_ROLES:
            await self.ensure_groups()
        await self.refresh_edges()
        # Announce this worker, but take partitions only on the first lease tick, one
        # heartbeat later: workers started together then see each other and split the
        # partitions at once, instead of one taking all and handing half over a tick later.
        await self.heartbeat.beat(set(), self.counters())
        if self.relay is not None:
            await self.relay.start()
        if self.index_role is not None:
            await self.index_role.start()
        if self.maintenance is not None:
            from retrieval.embedders import default_embedder

            emb = default_embedder()
            if emb is not None:  # no dense model installed: nothing to re-embed with
                self.maintenance.reembed = bind_reembed(self.bb, emb)
                self.maintenance.embedder_name = emb.name
        if self.settings.metrics_port is not None:
            self._metrics = MetricsServer(
                self.settings.metrics_port,
                lambda: render_metrics(self.role, self.id, self.counters()),
                host=self.settings.metrics_host,
            )
            await self._metrics.start()
        loops: list[Callable[[], Coroutine[Any, Any, None]]] = [self._lease_loop, self._edges_loop]
        if self.role in ROLE_TRANSFORMERS:
            loops += [self._consume_loop, self._trigger_loop]
        self._tasks = [asyncio.create_task(f(), name=f"{self.id}-{f.__name__}") for f in loops]
        if self.maintenance is not None:
            from apscheduler.schedulers.asyncio import AsyncIOScheduler

            self._scheduler = AsyncIOScheduler()
            self.maintenance.schedule(self._scheduler)
            self._scheduler.start()
        log.info("worker %s started (role %s)", self.id, self.role)

    async def stop(self) -> None:
        """Finish the batch in hand, release the leases, remove the heartbeat."""
        self._stopping.set()
        if self.relay is not None:
            await self.relay.stop()
        if self.index_role is not None:
            await self.index_role.stop()
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=False)
        await self.join()
        await self.leases.release_all()
        await self.heartbeat.stop()
        if self._metrics is not None:
            await self._metrics.stop()
        await self.registry.aclose()
        llm = getattr(self.runner.transform, "llm", None)
        if llm is not None and hasattr(llm, "aclose"):
            await llm.aclose()
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

    async def _tick_leases(self) -> None:
        # Beat first, so the live count (the fair share) includes this worker from its
        # first tick; beat again only when the owned set changed, to publish it at once.
        before = self.leases.current()
        await self.heartbeat.beat(before, self.counters())
        live = await live_workers(self.bb, self.role, self.settings.heartbeat_ms)
        if await self.leases.rebalance(max(live, 1)) != before:
            await self.heartbeat.beat(self.leases.current(), self.counters())
            # Readers and fire loops follow the new set now, not at their next poll.
            self._readers_changed.set()
            if self.relay is not None:
                self.relay.partitions_changed()
            self._fires_changed.set()

    async def _lease_loop(self) -> None:
        while await self._sleep(self.settings.heartbeat_ms):
            try:
                await self._tick_leases()
            except Exception:
                log.exception("lease/heartbeat tick failed; retrying")

    async def _edges_loop(self) -> None:
        """A slow backstop only: buffering and firing check the edges version themselves
        (:mod:`workers.edgeset`), so edge changes apply at once without it."""
        if self.role not in ROLE_TRANSFORMERS:
            return
        while await self._sleep(self.settings.edges_refresh_ms):
            try:
                await self.edge_set.check()
            except Exception:
                log.exception("could not check the edges version; keeping the loaded edges")

    async def _consume_loop(self) -> None:
        """Consume until stopped; a failed stream (Redis unreachable, a reader's error) is
        logged and reopened after a backoff, never left dead while the leases are renewed."""
        backoff = 0.1
        while not self._stopping.is_set():
            try:
                await self._consume_once()
                backoff = 0.1
            except Exception:
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
        )

    async def _buffer(self, batch: Batch) -> None:
        try:
            keys = await self.runner.buffer(batch.partition, self.id, batch.events)
        except Exception:
            log.exception("batch on partition %d failed; it stays pending", batch.partition)
            return  # released: re-delivered after a backoff
        batch.mark_acked()  # buffer.lua acked the events with their append
        self.batches += 1
        if keys:
            # Firing runs in the partition's fire loop, so buffering only appends and
            # acks: events never wait in memory long enough to be claimed by others.
            self._wake(batch.partition)

    def _wake(self, p: int) -> None:
        ev = self._due.get(p)
        if ev is not None:
            ev.set()

    async def _trigger_loop(self) -> None:
        """Keep one fire loop per owned partition: partitions fire independently, so one
        partition's round trips overlap another's transformer."""
        loops: dict[int, asyncio.Task[None]] = {}
        try:
            while not self._stopping.is_set():
                for p in [p for p, t in loops.items() if t.done()]:
                    del loops[p]  # given up: restarted below if owned again
                    self._due.pop(p, None)
                for p in self.leases.current() - loops.keys():
                    self._due[p] = asyncio.Event()
                    loops[p] = asyncio.create_task(self._fire_loop(p), name=f"{self.id}-fire-{p}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._fires_changed.wait(), self.settings.trigger_check_ms / 1000
                    )
                self._fires_changed.clear()
        finally:
            # A fire loop finishes the batch in hand (its transformer and trim) first.
            await asyncio.gather(*loops.values(), return_exceptions=True)

    async def _fire_loop(self, p: int) -> None:
        """Fire ``p``'s due buffers when its reader buffered items, and every
        ``trigger_check_ms`` (age and timer triggers), while ``p`` is owned."""
        due = self._due[p]
        while not self._stopping.is_set() and p in self.leases.owned:
            due.clear()
            try:
                await self.runner.check(p)
            except Exception:
                log.exception("trigger check on partition %d failed; will retry", p)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(due.wait(), self.settings.trigger_check_ms / 1000)


async def _serve(url: str, role: str, settings: WorkerSettings, ready: Callable[[], None]) -> None:
    async with Blackboard.connect(url) as bb:
        roles = list(ROLES) if role == "all" else [role]
        relaying = next(r for r in [*roles, None] if r is None or r in CONSUMING_ROLES)
        workers = [Worker(bb, r, settings, relay=r == relaying) for r in roles]
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        for w in workers:
            await w.start()
        ready()
        await stop.wait()
        await asyncio.gather(*(w.stop() for w in workers))


def run_worker(
    url: str,
    role: str,
    settings: WorkerSettings | None = None,
    ready: Callable[[], None] = lambda: None,
) -> int:
    """Run ``role`` (or ``all``) in this process until SIGTERM/SIGINT; exit code 0."""
    if role != "all" and role not in ROLES:
        raise ValueError(f"unknown role {role!r}; roles: {', '.join(ROLES)}, all")
    asyncio.run(_serve(url, role, settings or WorkerSettings.from_env(), ready))
    return 0
