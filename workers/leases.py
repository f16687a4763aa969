"""Partition leases: which worker of a role reads which partition.

A lease is a key ``bb:lease:<role>:<p>`` holding the worker's token with a TTL; the holder
renews it on every heartbeat, and a dead worker's leases lapse after ``ttl_ms``. Workers
aim for a fair share, ``ceil(P / live workers of the role)``: they take free partitions up
to it and hand back extras, so a new worker gets partitions within one lease period and a
dead worker's partitions are taken over within ``ttl_ms`` plus one heartbeat. A starting
worker beats once and takes partitions one heartbeat later, so workers started together
split them at once.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from dataclasses import dataclass

from blackboard import Blackboard
from blackboard import keys as K
from blackboard.scripts import run_script

__all__ = ["JobLease", "LeaseSet"]

log = logging.getLogger(__name__)


async def _lease(bb: Blackboard, key: str, op: str, token: str, ttl_ms: int) -> bool:
    return bool(await run_script(bb.client, "lease", [key], [op, token, str(ttl_ms)]))


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

    async def rebalance(self, live_workers: int) -> set[int]:
        """Renew held leases, drop lost ones, take free ones up to the fair share."""
        live = max(1, live_workers)
        share = math.ceil(self.bb.partitions / live)
        for p in sorted(self.owned):
            if not await _lease(self.bb, K.lease(self.role, p), "renew", self.token, self.ttl_ms):
                log.warning("lease %s:%d lapsed; giving the partition up", self.role, p)
                self.owned.discard(p)
        # Hand back extras beyond the fair share (highest first) so newcomers get work.
        for p in sorted(self.owned, reverse=True)[: max(0, len(self.owned) - share)]:
            await self.release_one(p)
        if len(self.owned) < share:
            candidates = [p for p in range(self.bb.partitions) if p not in self.owned]
            random.shuffle(candidates)  # spread contention between starting workers
            for p in candidates:
                if len(self.owned) >= share:
                    break
                if await _lease(self.bb, K.lease(self.role, p), "acquire", self.token, self.ttl_ms):
                    self.owned.add(p)
        return self.current()

    async def release_one(self, p: int) -> None:
        await _lease(self.bb, K.lease(self.role, p), "release", self.token, self.ttl_ms)
        self.owned.discard(p)

    async def release_all(self) -> None:
        await asyncio.gather(*(self.release_one(p) for p in sorted(self.owned)))


@dataclass
class JobLease:
    """A lease under which a periodic job runs on one partition, once across N workers."""

    bb: Blackboard
    job: str
    token: str
    ttl_ms: int = 60_000

    async def try_run(self, partition: int) -> bool:
        """Take the job's lease on ``partition``; False when another worker holds it."""
        return await _lease(
            self.bb, K.job_lease(self.job, partition), "acquire", self.token, self.ttl_ms
        )

    async def done(self, partition: int) -> None:
        await _lease(self.bb, K.job_lease(self.job, partition), "release", self.token, self.ttl_ms)
