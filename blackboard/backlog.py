"""How much of the dataflow is still to do, across every partition, in at most two round
trips: the benchmarks sample it every few ms and must not steal the CPU they measure.

Unconsumed for a group: content events not yet relayed to a bus (inbox and relaying
lists), plus the group's pending and undelivered (lag) events. Buffered: items in the
edge buffers. Settled: nothing of either for any group, and no batch in flight.
:class:`Progress` (``bb.progress``) asks both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .keys import PartitionKeys

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["Backlog", "Progress"]


@dataclass(frozen=True, slots=True)
class Backlog:
    """Events of one group not yet consumed, and items still in the edge buffers."""

    unconsumed: int
    buffered: int

    @property
    def unconsolidated(self) -> int:
        return self.unconsumed + self.buffered


def _name(v: bytes | str) -> str:
    return v.decode() if isinstance(v, bytes) else v


class Progress:
    """How far the dataflow is behind the writes (``bb.progress``), over every partition."""

    def __init__(self, bb: Blackboard) -> None:
        self.bb = bb

    async def backlog(self, group: str) -> Backlog:
        """The backlog of ``group``: two round trips whatever the partitions and buffers."""
        parts = [PartitionKeys(p) for p in range(self.bb.partitions)]
        async with self.bb.client.pipeline(transaction=False) as pipe:
            for pk in parts:
                pipe.xinfo_groups(pk.bus)
                pipe.smembers(pk.pendings)
                pipe.llen(pk.inbox)  # written, not yet relayed to the bus
                pipe.llen(pk.relaying)
            replies = await pipe.execute()
        unconsumed = sum(int(n) for n in replies[2::4]) + sum(int(n) for n in replies[3::4])
        buffers: list[bytes] = []
        for groups, bufs in zip(replies[::4], replies[1::4], strict=True):
            for g in groups:
                if _name(g["name"]) == group:
                    unconsumed += int(g["pending"]) + int(g.get("lag") or 0)
            buffers += bufs
        async with self.bb.client.pipeline(transaction=False) as pipe:
            for buf in buffers:
                pipe.llen(buf)
            buffered = sum(int(n) for n in await pipe.execute())
        return Backlog(unconsumed, buffered)

    async def settled(self) -> bool:
        """Every event relayed, consumed and acked by every group; no buffered or in-flight
        batch left."""
        for p in range(self.bb.partitions):
            pk = PartitionKeys(p)
            async with self.bb.client.pipeline(transaction=False) as pipe:
                pipe.scard(pk.pendings)
                pipe.hlen(pk.inflight)
                pipe.llen(pk.inbox)
                pipe.llen(pk.relaying)
                pipe.xinfo_groups(pk.bus)
                bufs, inflight, inbox, relaying, groups = await pipe.execute()
            if bufs or inflight or inbox or relaying:
                return False
            for g in groups:
                if int(g["pending"]) or g.get("lag") not in (0, None):
                    return False
        return True
