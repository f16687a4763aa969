"""Partition leases: which worker of a role reads which partition.

Every lease lives in one hash, the lease table (``bb:leases``): ``h:<role>:<p>`` names the
holder (a worker id), ``w:<role>:<holder>`` the holder's process and ``b:<process>`` that
process's last beat (ms, Redis clock). A lease lasts as long as its holder's process beats
within ``ttl_ms``, so a process renews all the leases of all its roles by writing one field
and learns the whole table with one HGETALL per heartbeat (:class:`LeaseTable`) -- an idle
worker costs two commands and a few dozen bytes of AOF a beat, not a command per lease.
Taking and giving up a lease is a script (``lease_table.lua``) that checks the holder's beat.

Workers aim for a fair share, ``ceil(P / live workers of the role)``: they take free or
lapsed partitions up to it and hand back extras, so a new worker gets partitions within one
lease period and a dead worker's partitions are taken over within ``ttl_ms`` plus one
heartbeat. A starting worker beats once and takes partitions one heartbeat later, so
workers started together split them at once.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import random
import socket
import uuid
from dataclasses import dataclass, field

from blackboard import Blackboard
from blackboard.lease import LeaseRows
from blackboard.tasks import cancel_and_wait

__all__ = ["JobLease", "LeaseSet", "LeaseSnapshot", "LeaseTable"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LeaseSnapshot:
    """The lease table as one read saw it: holders by (role, partition), the beat of each
    (role, holder) (its process's), and ``now`` (Redis clock) when it was read."""

    now: int
    holders: dict[tuple[str, int], str] = field(default_factory=dict)
    beats: dict[tuple[str, str], int] = field(default_factory=dict)

    @classmethod
    def of(cls, now: int, rows: LeaseRows) -> LeaseSnapshot:
        """The snapshot of a table read: a holder's beat is its process's."""
        beats = {rh: rows.beats[p] for rh, p in rows.processes.items() if p in rows.beats}
        return cls(now, dict(rows.holders), beats)

    def live(self, role: str, within_ms: int) -> int:
        """Holders of ``role`` that beat within ``within_ms``."""
        return sum(
            1 for (r, _), at in self.beats.items() if r == role and self.now - at <= within_ms
        )

    def lapsed(self, role: str, partition: int, ttl_ms: int) -> bool:
        """Whether the lease is free: no holder, or one that has not beat within ``ttl_ms``."""
        holder = self.holders.get((role, partition))
        if holder is None:
            return True
        beat = self.beats.get((role, holder))
        return beat is None or self.now - beat >= ttl_ms


class LeaseTable:
    """The lease table as one process uses it: one beat for all its holders and one read of
    the table per :meth:`tick`. Holders :meth:`join` and :meth:`leave`; processes that
    stopped beating long ago (``stale_ms``) are removed with their holders, so the table
    stays small."""

    def __init__(self, bb: Blackboard, stale_ms: int = 600_000) -> None:
        self.bb, self.stale_ms = bb, stale_ms
        self.table = bb.lease_table
        self.process = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._holders: set[tuple[str, str]] = set()
        #: Holders whose process field the table showed at the last tick.
        self._listed: set[tuple[str, str]] = set()

    def join(self, role: str, holder: str) -> None:
        self._holders.add((role, holder))

    async def leave(self, role: str, holder: str) -> None:
        """Stop beating for ``holder`` (its leases lapse at once); the process's beat goes
        with its last holder."""
        self._holders.discard((role, holder))
        await self.table.forget([(role, holder)], [] if self._holders else [self.process])

    async def tick(self) -> LeaseSnapshot:
        """Beat for every joined holder, read the table: two commands in one round trip (a
        holder's process field is written only when the table does not show it)."""
        now = self.bb.now_ms()
        rows = await self.table.beat_and_read(
            self.process if self._holders else None, now, self._holders - self._listed
        )
        snap = LeaseSnapshot.of(now, rows)
        self._listed = {rh for rh in self._holders if rh in snap.beats}
        await self._prune(now, rows)
        return snap

    async def _prune(self, now: int, rows: LeaseRows) -> None:
        """Remove processes that have not beat for ``stale_ms`` and their holders' fields."""
        stale = {p for p, at in rows.beats.items() if now - at > self.stale_ms}
        gone = [rh for rh, p in rows.processes.items() if p in stale or p not in rows.beats]
        if stale or gone:
            await self.table.forget(gone, stale)


class TableClock:
    """Ticks a :class:`LeaseTable` every ``interval_ms`` for the lease loops of a process,
    which wait for the next snapshot with :meth:`next` instead of each reading the table."""

    def __init__(self, table: LeaseTable, interval_ms: int) -> None:
        self.table, self.interval_ms = table, interval_ms
        self._next: asyncio.Future[LeaseSnapshot] = asyncio.get_running_loop().create_future()
        self._task: asyncio.Task[None] | None = None
        self._users = 0
        self._stopped = False

    def start(self) -> None:
        self._users += 1
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="lease-table")

    async def stop(self) -> None:
        """One user fewer; the clock stops with the last."""
        self._users -= 1
        if self._users > 0 or self._task is None:
            return
        self._stopped = True
        await cancel_and_wait([self._task])  # a swallowed cancel must not keep it alive
        self._task = None

    async def next(self) -> LeaseSnapshot:
        """The next snapshot; raises what the tick raised when it failed."""
        return await asyncio.shield(self._next)

    async def _run(self) -> None:
        while not self._stopped:
            await asyncio.sleep(self.interval_ms / 1000)
            fut, self._next = self._next, asyncio.get_running_loop().create_future()
            try:
                fut.set_result(await self.table.tick())
            except asyncio.CancelledError:
                fut.cancel()
                raise
            except Exception as exc:
                fut.set_exception(exc)
                fut.exception()  # retrieved: every waiter logs it; none may be waiting


@dataclass
class LeaseSet:
    """The partitions one worker holds for one role."""

    bb: Blackboard
    role: str
    token: str
    ttl_ms: int = 10_000

    def __post_init__(self) -> None:
        self.owned: set[int] = set()

    def current(self) -> set[int]:
        """The owned set (what :meth:`Blackboard.consume` re-reads to rebalance)."""
        return set(self.owned)

    def drop_all(self, why: str) -> None:
        """Forget every lease without telling Redis (it cannot be reached, or the role
        cannot run): they lapse ``ttl_ms`` after the last beat and others take them."""
        if self.owned:
            log.warning("%s: giving up %s partitions %s", why, self.role, sorted(self.owned))
        self.owned.clear()

    async def rebalance(self, snap: LeaseSnapshot, live_within_ms: int) -> set[int]:
        """Drop leases the table no longer gives this worker, hand back extras beyond the
        fair share, take free or lapsed ones up to it. Nothing is sent when the share holds."""
        for p in sorted(self.owned):
            if snap.holders.get((self.role, p)) != self.token:
                log.warning("lease %s:%d lapsed; giving the partition up", self.role, p)
                self.owned.discard(p)
        live = max(1, snap.live(self.role, live_within_ms))
        share = math.ceil(self.bb.partitions / live)
        # Hand back extras beyond the fair share (highest first) so newcomers get work.
        for p in sorted(self.owned, reverse=True)[: max(0, len(self.owned) - share)]:
            await self.release_one(p)
        if len(self.owned) < share:
            candidates = [
                p
                for p in range(self.bb.partitions)
                if p not in self.owned and (snap.lapsed(self.role, p, self.ttl_ms)
                                            # given up locally (no tick for a lease TTL,
                                            # e.g. Redis over maxmemory) and still ours
                                            or snap.holders.get((self.role, p)) == self.token)
            ]
            random.shuffle(candidates)  # spread contention between starting workers
            for p in candidates:
                if len(self.owned) >= share:
                    break
                if await self.bb.lease_table.acquire(self.role, p, self.token, self.ttl_ms):
                    self.owned.add(p)
        return self.current()

    async def release_one(self, p: int) -> None:
        await self.bb.lease_table.release(self.role, p, self.token, self.ttl_ms)
        self.owned.discard(p)

    async def release_all(self) -> None:
        await asyncio.gather(*(self.release_one(p) for p in sorted(self.owned)))


@dataclass
class JobLease:
    """A lease under which one run of a periodic job covers every partition, once across N
    workers per interval (one lease per run, not per partition: an idle run then costs one
    command for the lease, plus the job's own look at each partition)."""

    bb: Blackboard
    job: str
    token: str
    ttl_ms: int = 60_000

    async def try_run(self) -> bool:
        """Take the job's lease; False when another worker holds it."""
        return await self.bb.job_lease(self.job).acquire(self.token, self.ttl_ms)

    async def done(self) -> None:
        await self.bb.job_lease(self.job).release(self.token)
