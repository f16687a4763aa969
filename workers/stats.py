"""Operational statistics: buses, consumer groups (lag, pending), DLQs, scopes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from blackboard import Blackboard
from blackboard.bus import GroupInfo

from .heartbeat import WorkerInfo

__all__ = ["BusStats", "GroupStats", "Stats", "collect_stats", "progress_rows"]


#: One consumer group on one bus (the substrate's record of it).
GroupStats = GroupInfo


@dataclass(frozen=True, slots=True)
class BusStats:
    partition: int
    length: int
    dlq: int
    scopes: int
    groups: tuple[GroupStats, ...] = ()
    #: content events written and not yet relayed to the bus
    inbox: int = 0
    #: entries evicted or expired for readers, kept until every edge consolidated them
    retained: int = 0
    #: entries waiting for a vector from the index role
    unembedded: int = 0


@dataclass(frozen=True, slots=True)
class Stats:
    partitions: int
    buses: tuple[BusStats, ...]
    workers: tuple[object, ...] = field(default_factory=tuple)

    def totals(self) -> dict[str, int]:
        return {
            "events_on_buses": sum(b.length for b in self.buses),
            "dlq": sum(b.dlq for b in self.buses),
            "pending": sum(g.pending for b in self.buses for g in b.groups),
            "lag": sum(g.lag or 0 for b in self.buses for g in b.groups),
            "scopes": sum(b.scopes for b in self.buses),
            "inbox": sum(b.inbox for b in self.buses),
            "retained": sum(b.retained for b in self.buses),
            "unembedded": sum(b.unembedded for b in self.buses),
        }


async def collect_stats(bb: Blackboard) -> Stats:
    """One XINFO GROUPS and five lengths per partition: O(partitions + groups)."""
    buses = []
    for p in range(bb.partitions):
        bus = bb.bus(p)
        c = await bus.counts()
        groups = tuple(await bus.groups())
        buses.append(BusStats(p, c.length, c.dlq, c.scopes, groups, c.inbox, c.retained,
                              c.unembedded))
    return Stats(bb.partitions, tuple(buses))


def progress_rows(workers: list[WorkerInfo], now_ms: int) -> list[dict[str, Any]]:
    """Per (role, partition), how long ago its reader last made progress (``age_ms``) and
    which worker reads it, by role then partition (``stats``, the dashboard)."""
    rows = [{"role": w.role, "partition": p, "worker": w.id, "age_ms": max(0, now_ms - t)}
            for w in workers for p, t in w.progress.items()]
    return sorted(rows, key=lambda r: (r["role"], r["partition"]))
