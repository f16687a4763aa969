"""A worker process's share of one role: partition leases, heartbeats, the role's loops.

Lifecycle verbs as in dramatiq: :meth:`Worker.start` (in a running loop),
:meth:`Worker.stop` (finish the batch in hand, release leases, stop heartbeating) and
:meth:`Worker.join`. What the role does is a plug-in (:mod:`workers.roles`);
:func:`workers.process.run_worker` runs workers in a process.
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

from blackboard import Blackboard, ConsumeCounters
from blackboard.errors import OutOfMemory, ServerUnavailable
from memory.registry import Registry

from .heartbeat import Heartbeat
from .leases import LeaseSet, LeaseSnapshot, LeaseTable, TableClock
from .oom import OomNotice
from .outage import OutageNotice
from .progress import ProgressWatch
from .roles import Role, role_spec, roles_running
from .settings import WorkerSettings

__all__ = ["Worker"]

log = logging.getLogger(__name__)


class Worker:
    """Runs one role. ``role`` is one of :data:`workers.roles.ROLES`."""

    def __init__(
        self,
        bb: Blackboard,
        role: str,
        settings: WorkerSettings | None = None,
        worker_id: str | None = None,
        registry: Registry | None = None,
        clock: TableClock | None = None,
    ) -> None:
        """``registry`` and ``clock`` are the process's, shared by its roles (one
        connection pool, one lease-table beat); a worker without them makes its own."""
        spec = role_spec(role)
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
        self.holds_leases = spec.consumes
        self.consume_counters = ConsumeCounters()
        self.progress = ProgressWatch(bb, role, self.id, self.leases, self.consume_counters,
                                      self.settings.stall_ms)
        self.batches = 0
        self._last_tick = time.monotonic()
        self._ticks = 0
        self.stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._oom = OomNotice(f"worker {self.id}", self.settings.oom_say_every_s)
        self._outage = OutageNotice(f"worker {self.id} heartbeats and leases",
                                    self.settings.oom_say_every_s)
        #: What the role does (:class:`workers.roles.Role`), built on this worker.
        self.plugin: Role = spec.factory(self)

    # -- state ----------------------------------------------------------------------------

    async def ensure_groups(self) -> None:
        """This role's consumer group, and the group of every role an edge needs.

        Created when the edge exists, not when its role's first worker starts: the bus trim
        point and the dataflow hold (the flowmark) wait for every group, so a role whose
        workers start late still finds each event and each evicted entry it needs.
        """
        edges = await self.registry.list_edges()
        wanted = roles_running({e.transformer for e in edges})
        own = set() if role_spec(self.role).no_group else {self.role}
        await self.bb.ensure_groups(sorted(wanted | own))

    def counters(self) -> dict[str, int]:
        c = {"batches": self.batches, **self.plugin.counters()}
        c["partitions"] = len(self.leases.owned)
        c["stalls"] = self.progress.stalls
        c.update({f"consume_{k}": v for k, v in self.consume_counters.totals().items()})
        # The process's relay loops (blackboard.relay), shared by its roles.
        c.update({f"relay_{k}": v for k, v in asdict(self.bb.relays.counters).items()})
        return c

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the background loops; returns once they run."""
        # Announce this worker (its first lease-table tick writes its beat), but take
        # partitions only on the next tick, one heartbeat later: workers started together
        # then see each other and split the partitions at once, instead of one taking all
        # and handing half over a tick later.
        await self.announce()
        if self._clock is None:
            self._clock = TableClock(LeaseTable(self.bb), self.settings.heartbeat_ms)
        if self.holds_leases:
            self._clock.table.join(self.role, self.id)
        self._clock.start()
        self._started = True
        await self.plugin.start()
        self._tasks = [asyncio.create_task(self._lease_loop(), name=f"{self.id}-_lease_loop")]
        log.info("worker %s started (role %s)", self.id, self.role)

    async def stop(self) -> None:
        """Finish the batch in hand, release the leases, remove the heartbeat.

        Each step runs even if an earlier one failed (Redis gone): a worker told to stop
        stops; what it could not release lapses ``lease_ttl_ms`` later."""
        self.stopping.set()
        steps: list[tuple[str, Callable[[], Coroutine[Any, Any, None]]]] = [
            (f"{self.role} role", self.plugin.stop),
            ("loops", self.join),
            ("leases", self.leases.release_all),
        ]
        if self._clock is not None and self._started:
            clock = self._clock
            steps += [("lease table", lambda: clock.table.leave(self.role, self.id)),
                      ("lease clock", clock.stop)]
        steps.append(("heartbeat", self.heartbeat.stop))
        if self._own_registry:
            steps.append(("registry", self.registry.aclose))
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

    async def sleep(self, ms: int) -> bool:
        """Sleep unless stopping; True when the worker should go on."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), ms / 1000)
        return not self.stopping.is_set()

    # -- leases ---------------------------------------------------------------------------

    def claim_window_ms(self) -> int:
        """How long a reader that took a partition over claims what others left pending:
        until the previous owner has surely noticed the loss (its lease lapsed and it
        ticked) and what it read meanwhile has idled ``claim_idle_ms``."""
        s = self.settings
        return s.lease_ttl_ms + 2 * s.heartbeat_ms + 2 * s.claim_idle_ms

    def healthy(self) -> bool:
        """False once this role's consuming has failed for a lease TTL without a success:
        it then gives its partitions up so that a worker that can run them takes them."""
        return self.plugin.failing_for() < self.settings.lease_ttl_ms / 1000

    async def _tick_leases(self, snap: LeaseSnapshot) -> None:
        before = self.leases.current()
        self._ticks += 1
        if not self.holds_leases or self._ticks == 1:
            pass  # the first tick only announces the beat (see start)
        elif self.healthy():
            await self.progress.check()
            await self.leases.rebalance(snap, 3 * self.settings.heartbeat_ms)
        elif before:
            log.error("worker %s cannot consume; releasing its partitions", self.id)
            await self.leases.release_all()
        changed = self.leases.current() != before
        await self.heartbeat.beat(self.leases.current(), self.counters(), force=changed,
                                  progress=self.progress.last_ms())
        if changed:
            self.plugin.partitions_changed()

    async def _lease_loop(self) -> None:
        """Follow the process's lease-table ticks (one beat, one read for all roles)."""
        assert self._clock is not None
        stop = asyncio.ensure_future(self.stopping.wait())
        try:
            while not self.stopping.is_set():
                tick = asyncio.ensure_future(self._clock.next())
                await asyncio.wait({tick, stop}, return_when=asyncio.FIRST_COMPLETED)
                if not tick.done():
                    tick.cancel()
                    return
                try:
                    await self._tick_leases(tick.result())
                    self._last_tick = time.monotonic()
                    self._outage.recovered()
                except ServerUnavailable as exc:
                    self._outage.failed(exc)
                    self._lost_ticks()
                except OutOfMemory:
                    self._oom.say("heartbeats and leases wait; the worker resumes by itself "
                                  "once memory is freed")
                    self._lost_ticks()
                except Exception:
                    log.exception("lease/heartbeat tick failed; retrying")
                    self._lost_ticks()
        finally:
            stop.cancel()

    def _lost_ticks(self) -> None:
        """Unsure what the table says: after a lease TTL without a tick others may hold them
        (or, if the table still names this worker, the next tick takes them back)."""
        if time.monotonic() - self._last_tick > self.settings.lease_ttl_ms / 1000:
            self.leases.drop_all("no lease tick for a lease TTL")
            self.plugin.partitions_changed()

    async def announce(self) -> None:
        """The consumer groups and the first heartbeat: the start's first writes, safe to
        retry (a process started while Redis is over its maxmemory waits on these)."""
        if self.holds_leases:
            await self.ensure_groups()
        await self.heartbeat.beat(set(), self.counters())

