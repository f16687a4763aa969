"""Timing a backlog's drain from outside the workers: sample, every 50 ms and in two round
trips, how many events of a consumer group are still unconsumed and how many are not yet
consolidated (pending buffers included), then take the rate from the first sample in which
consumption had begun to the first in which nothing was left."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from blackboard.keys import PartitionKeys

if TYPE_CHECKING:
    from blackboard import Blackboard

__all__ = ["Sample", "drain_rate", "idle", "remaining", "sample_until_done"]


async def idle(bb: Blackboard) -> bool:
    """Every event consumed and acked, no buffered or in-flight batch left."""
    for p in range(bb.partitions):
        pk = PartitionKeys(p)
        async with bb.client.pipeline(transaction=False) as pipe:
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


async def remaining(bb: Blackboard, group: str) -> tuple[int, int]:
    """Events of ``group`` (not yet consumed, not yet consolidated): not yet relayed,
    undelivered and unacked, plus, for the second, the items still in the edge buffers.
    Two round trips whatever
    the number of partitions and buffers: the sampler must not steal the CPU it measures."""
    parts = [PartitionKeys(p) for p in range(bb.partitions)]
    async with bb.client.pipeline(transaction=False) as pipe:
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
            name = g["name"].decode() if isinstance(g["name"], bytes) else g["name"]
            if name == group:
                unconsumed += int(g["pending"]) + int(g.get("lag") or 0)
        buffers += bufs
    async with bb.client.pipeline(transaction=False) as pipe:
        for buf in buffers:
            pipe.llen(buf)
        buffered = sum(int(n) for n in await pipe.execute())
    return unconsumed, unconsumed + buffered


Sample = tuple[float, int, int]  # (perf_counter s, unconsumed, unconsolidated)


def drain_rate(samples: list[Sample], n: int) -> float:
    """Events/s from the first sample in which consumption had begun (taking the sample
    before it: the slower reading) to the first in which nothing was left."""
    start = next(i for i, (_, unconsumed, _) in enumerate(samples) if unconsumed < n)
    end = next(t for t, _, left in samples if left == 0)
    return n / (end - samples[max(0, start - 1)][0])


async def sample_until_done(bb: Blackboard, group: str, timeout_s: float) -> list[Sample]:
    """Sample every 50 ms until nothing is left (cheap: the bench must not steal the CPU
    it measures)."""
    t0 = time.perf_counter()
    samples: list[Sample] = []
    while True:
        unconsumed, left = await remaining(bb, group)
        samples.append((time.perf_counter(), unconsumed, left))
        if left == 0 and await idle(bb):
            return samples
        if time.perf_counter() - t0 > timeout_s:
            raise RuntimeError(f"{left} events left after {timeout_s:.0f} s")
        await asyncio.sleep(0.05)
