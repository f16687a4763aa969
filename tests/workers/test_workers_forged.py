"""Bus events are hints: forged ones cause at most an idempotent re-processing."""

from __future__ import annotations

import asyncio
import json
import time

from blackboard import Blackboard
from blackboard.keys import PartitionKeys
from memory.registry import Registry
from memory.subscriptions import MemorySubscription, Trigger
from workers.settings import WorkerSettings
from workers.worker import Worker

FAST = WorkerSettings(heartbeat_ms=200, lease_ttl_ms=1000, trigger_check_ms=100, block_ms=100)


async def _copies(bb: Blackboard) -> list[str]:
    return [e.metadata["origin_id"] for e in await bb.scope("agent:a1:stm").entries(limit=None)]


async def _wait(bb: Blackboard, n: int) -> list[str]:
    deadline = time.monotonic() + 15
    got = await _copies(bb)
    while len(got) < n and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        got = await _copies(bb)
    return got


async def test_forged_bus_events_change_nothing_but_reprocessing(bb: Blackboard) -> None:
    reg = Registry(bb)
    await reg.save_edge(
        MemorySubscription("agent:*:working", "agent:{1}:stm", "identity", trigger=Trigger.count(1))
    )
    await reg.aclose()
    w = Worker(bb, "summarize", FAST)
    await w.start()
    try:
        real = await bb.scope("agent:a1:working").write({"text": "real"})
        assert await _wait(bb, 1) == [real.id]

        bus = PartitionKeys(bb.scope("agent:a1:working").partition).bus
        now = str(int(time.time() * 1000))
        forged = [
            {"scope": "agent:a1:working", "type": "written", "entry": real.id},  # replay
            {"scope": "agent:a1:working", "type": "written", "entry": "NOSUCHENTRY"},
            {"scope": "agent:a1:working|x", "type": "written", "entry": real.id},
            {"scope": "not a scope", "type": "written", "entry": real.id},
            {"scope": "agent:a1:working", "type": "bogus", "entry": real.id},
        ]
        for f in forged:
            await bb.client.xadd(bus, {**f, "version": "1", "tags": json.dumps([]), "at": now})
        later = await bb.scope("agent:a1:working").write({"text": "later"})
        got = await _wait(bb, 2)
        assert sorted(got) == sorted([real.id, later.id])  # one copy each, nothing else
        await asyncio.sleep(0.5)
        assert len(await _copies(bb)) == 2
        # the undecodable one went to the DLQ with a reason; the others were harmless
        dlq = await bb.dead_letters.list(partition=bb.scope("agent:a1:working").partition)
        assert [d.reason for d in dlq] == ["undecodable event"]
        assert w.plugin.runner.counters.dead_lettered == 0
    finally:
        await w.stop()
