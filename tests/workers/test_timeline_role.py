"""The ``timeline`` role keeps an agent's table of contents from the events (issue 28):
the default hierarchy's edge, partition leases, each entry placed once."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

from blackboard import Blackboard
from blackboard.toc import TocStore
from memory import AgentMemory, Message
from retrieval.toc import TocNode
from workers.settings import WorkerSettings
from workers.worker import Worker

FAST = WorkerSettings(heartbeat_ms=200, lease_ttl_ms=1000, trigger_check_ms=100, block_ms=100)
SCOPE = "agent:a1:ltm:episodic"


async def _root(bb: Blackboard) -> TocNode | None:
    snap = await TocStore(bb, SCOPE).read(["root"])
    return TocNode.from_json(SCOPE, "root", snap.nodes["root"])


async def _count(bb: Blackboard, n: int) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        root = await _root(bb)
        if root is not None and root.count >= n:
            return root.count
        await asyncio.sleep(0.1)
    root = await _root(bb)
    return root.count if root else 0


async def test_the_role_places_each_message_once(bb: Blackboard) -> None:
    async with AgentMemory(bb, "a1", default_retriever=False) as mem:
        await mem.install_default_hierarchy()
        w = Worker(bb, "timeline", FAST)
        await w.start()
        try:
            said = [Message("Ana", f"talked about the garden, part {i}",
                            datetime(2023, 5, 8, 13, i)) for i in range(12)]
            await mem.add_messages("s1", said[:7])
            assert await _count(bb, 7) == 7
            await mem.add_messages("s1", said[7:])
            assert await _count(bb, 12) == 12
            await asyncio.sleep(0.3)
            tree = await mem.timeline(at="2023-05-08", depth=1)
            [seg] = tree.children
            assert seg.node.count == 12 and len(set(seg.node.entries)) == 12
            assert (await _root(bb)).count == 12  # type: ignore[union-attr]
            assert w.plugin.counters()["dead_lettered"] == 0
        finally:
            await w.stop()
