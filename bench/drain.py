"""Timing a backlog's drain from outside the workers: sample, every 50 ms and in two round
trips, how many events of a consumer group are still unconsumed and how many are not yet
consolidated (pending buffers included), then take the rate from the first sample in which
consumption had begun to the first in which nothing was left."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from blackboard import Blackboard

__all__ = ["Sample", "drain_rate", "idle", "remaining", "sample_until_done"]


async def idle(bb: Blackboard) -> bool:
    """Every event consumed and acked, no buffered or in-flight batch left."""
    return await bb.progress.settled()


async def remaining(bb: Blackboard, group: str) -> tuple[int, int]:
    """Events of ``group`` (not yet consumed, not yet consolidated): not yet relayed,
    undelivered and unacked, plus, for the second, the items still in the edge buffers.
    Two round trips whatever the number of partitions and buffers: the sampler must not
    steal the CPU it measures."""
    b = await bb.progress.backlog(group)
    return b.unconsumed, b.unconsolidated


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
