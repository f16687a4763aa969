"""Progress, not liveness: a worker that beats and holds its leases but whose reader of a
partition stopped reading (a client call that never returns, a handler that hangs) would
hold the partition forever, unread. Each heartbeat tick looks at the last progress of each
owned partition's reader (:class:`blackboard.batch.PartitionProgress`: a read returned or
a batch settled); one silent for ``stall_ms`` whose group has events to read or pending
(one XINFO GROUPS, asked only then) is given up: the lease is released, the reader
retired, and a fresh reader takes it over at the next tick -- logged as one line, counted
as ``stalls``. An idle reader is never suspect: its blocking read returns every
``block_ms``."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

from blackboard import Blackboard, ConsumeCounters

from .leases import LeaseSet

__all__ = ["ProgressWatch"]

log = logging.getLogger(__name__)


@dataclass
class ProgressWatch:
    bb: Blackboard
    role: str
    worker_id: str
    leases: LeaseSet
    counters: ConsumeCounters
    stall_ms: int
    #: partitions given up for want of progress (a metric)
    stalls: int = 0

    def ages_ms(self) -> dict[int, int]:
        """Per owned partition, ms since its reader's last progress (Redis clock)."""
        now = self.bb.now_ms()
        return {p: max(0, now - pr.last_ms) for p, pr in sorted(self.counters.progress.items())
                if p in self.leases.owned}

    def last_ms(self) -> Mapping[int, int]:
        """Per owned partition, when its reader last made progress (Redis clock, ms)."""
        return {p: pr.last_ms for p, pr in sorted(self.counters.progress.items())
                if p in self.leases.owned}

    async def check(self) -> list[int]:
        """Give up the owned partitions that stalled; -> them."""
        now = time.monotonic()
        stalled = []
        for p in sorted(self.leases.owned):
            pr = self.counters.progress.get(p)
            if pr is None or pr.stalled or now - pr.last < self.stall_ms / 1000:
                continue
            group = next((g for g in await self.bb.bus(p).groups() if g.role == self.role),
                         None)
            behind = None if group is None or group.lag is None else group.lag + group.pending
            if behind == 0:
                continue  # nothing to read: a hung idle read harms nothing yet
            silent = now - pr.last
            pr.stalled = True  # its pool retires it even if the lease comes back at once
            self.stalls += 1
            stalled.append(p)
            log.error("worker %s: %s partition %d made no progress for %.0fs with %s events "
                      "to read or pending; releasing its lease and restarting its reader",
                      self.worker_id, self.role, p, silent,
                      "unknown" if behind is None else behind)
            await self.leases.release_one(p)
        return stalled
