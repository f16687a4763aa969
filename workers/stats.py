"""Operational statistics: buses, consumer groups (lag, pending), DLQs, scopes."""

from __future__ import annotations

from dataclasses import dataclass, field

from redis import exceptions as rexc

from blackboard import Blackboard
from blackboard.keys import PartitionKeys

__all__ = ["BusStats", "GroupStats", "Stats", "collect_stats"]


@dataclass(frozen=True, slots=True)
class GroupStats:
    """One consumer group on one bus; ``lag`` is None when Redis cannot tell (trimmed)."""

    role: str
    consumers: int
    pending: int
    lag: int | None
    last_delivered: str


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
        }


async def collect_stats(bb: Blackboard) -> Stats:
    """One XINFO GROUPS and five lengths per partition: O(partitions + groups)."""
    buses = []
    for p in range(bb.partitions):
        pk = PartitionKeys(p)
        async with bb.client.pipeline(transaction=False) as pipe:
            pipe.xlen(pk.bus)
            pipe.xlen(pk.dlq)
            pipe.scard(pk.scopes)
            pipe.llen(pk.inbox)
            pipe.scard(pk.retired)
            length, dlq, scopes, inbox, retained = await pipe.execute()
        groups: list[GroupStats] = []
        try:
            for g in await bb.client.xinfo_groups(pk.bus):
                lag = g.get("lag")
                groups.append(
                    GroupStats(
                        role=_s(g["name"]),
                        consumers=int(g["consumers"]),
                        pending=int(g["pending"]),
                        lag=None if lag is None else int(lag),
                        last_delivered=_s(g["last-delivered-id"]),
                    )
                )
        except rexc.ResponseError:
            pass  # bus not created yet
        buses.append(BusStats(p, int(length), int(dlq), int(scopes), tuple(groups),
                              int(inbox), int(retained)))
    return Stats(bb.partitions, tuple(buses))


def _s(v: bytes | str) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)
