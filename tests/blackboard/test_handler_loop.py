"""bb.handle_batches(): a handler per batch, run concurrently across partitions, finished on
stop."""

from __future__ import annotations

import asyncio

import pytest
from test_consumer import scopes_in_distinct_partitions

from blackboard import Batch, Blackboard, ConsumeOptions
from blackboard.keys import PartitionKeys

OPTS = ConsumeOptions(count=50, block_ms=50, rebalance_every_ms=50)


async def _pending(bb: Blackboard, p: int, role: str) -> int:
    return int((await bb.client.xpending(PartitionKeys(p).bus, role))["pending"])


async def test_partitions_are_handled_concurrently(bb: Blackboard) -> None:
    a, b = scopes_in_distinct_partitions(bb, 2)
    pa, pb = bb.scope(a).partition, bb.scope(b).partition
    await bb.scope(a).write("a1")
    await bb.scope(b).write("b1")
    release_a = asyncio.Event()
    seen: list[str] = []
    stop = asyncio.Event()

    async def handler(batch: Batch) -> None:
        seen.append(batch.events[0].scope)
        if batch.partition == pa:
            await release_a.wait()  # partition a's handler blocks...
        await batch.ack()

    task = asyncio.create_task(bb.handle_batches("r", "w", handler, stop, [pa, pb], OPTS))
    try:
        # ...while partition b's batch is handled and acked meanwhile.
        for _ in range(200):
            if b in seen and await _pending(bb, pb, "r") == 0:
                break
            await asyncio.sleep(0.02)
        assert b in seen and a in seen
        assert await _pending(bb, pb, "r") == 0
        assert await _pending(bb, pa, "r") == 1
        release_a.set()
        for _ in range(200):
            if await _pending(bb, pa, "r") == 0:
                break
            await asyncio.sleep(0.02)
        assert await _pending(bb, pa, "r") == 0
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


async def test_unacked_batch_is_released_and_redelivered(bb: Blackboard) -> None:
    (a,) = scopes_in_distinct_partitions(bb, 1)
    e = await bb.scope(a).write("x")
    deliveries: list[str] = []
    stop = asyncio.Event()

    async def handler(batch: Batch) -> None:
        deliveries.append(batch.events[0].entry_id)
        if len(deliveries) >= 2:
            await batch.ack()

    task = asyncio.create_task(bb.handle_batches("r", "w", handler, stop, None, OPTS))
    try:
        for _ in range(300):
            if len(deliveries) >= 2:
                break
            await asyncio.sleep(0.02)
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
    assert deliveries[:2] == [e.id, e.id]
    assert await _pending(bb, bb.scope(a).partition, "r") == 0


async def test_stop_finishes_the_batch_in_hand(bb: Blackboard) -> None:
    (a,) = scopes_in_distinct_partitions(bb, 1)
    await bb.scope(a).write("x")
    entered = asyncio.Event()
    finished: list[bool] = []
    stop = asyncio.Event()

    async def handler(batch: Batch) -> None:
        entered.set()
        await asyncio.sleep(0.3)  # stop arrives while this batch is in hand
        await batch.ack()
        finished.append(True)

    task = asyncio.create_task(bb.handle_batches("r", "w", handler, stop, None, OPTS))
    await asyncio.wait_for(entered.wait(), 10)
    stop.set()
    await asyncio.wait_for(task, 10)
    assert finished == [True]
    assert await _pending(bb, bb.scope(a).partition, "r") == 0


async def test_a_handler_error_stops_serving_and_is_raised(bb: Blackboard) -> None:
    (a,) = scopes_in_distinct_partitions(bb, 1)
    await bb.scope(a).write("x")

    async def handler(batch: Batch) -> None:
        raise RuntimeError("handler broke")

    with pytest.raises(RuntimeError, match="handler broke"):
        await asyncio.wait_for(
            bb.handle_batches("r", "w", handler, asyncio.Event(), None, OPTS), 10
        )
    # The event was never acked: it stays pending for a later consumer.
    assert await _pending(bb, bb.scope(a).partition, "r") == 1
