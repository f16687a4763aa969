"""The ``timeline`` role keeps an agent's table of contents from the events (issue 28):
the default hierarchy's edge, partition leases, each entry placed once."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

from blackboard import Blackboard, WriteRequest
from blackboard.keys import PartitionKeys
from blackboard.toc import TocStore
from memory import AgentMemory, Message
from memory.registry import Registry
from retrieval.toc import TocNode
from workers.dataflow import BufferItem
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


async def test_a_scope_that_cannot_be_placed_holds_no_other_back(bb: Blackboard) -> None:
    # An agent may write its own keys: one that garbles its table's version makes every
    # placement of its scope fail. The other agents' entries of the same read are placed
    # and acked; only its own events stay pending (to the DLQ after max_deliveries).
    async with AgentMemory(bb, "a1", default_retriever=False) as mem:
        await mem.install_default_hierarchy()
    p = bb.scope(SCOPE).partition
    bad = next(s for k in range(2, 500) if bb.scope(s := f"agent:a{k}:ltm:episodic").partition == p)
    await bb.client.hset(TocStore(bb, bad).keys.toc, "_v", "garbled")
    good = await bb.scope(SCOPE).write_many([WriteRequest(f"note {i} on the pump")
                                             for i in range(5)])
    await bb.scope(bad).write_many([WriteRequest(f"bad {i}") for i in range(5)])
    await bb.relays.relay_all()  # one read holds both
    w = Worker(bb, "timeline", FAST)
    await w.start()
    try:
        assert await _count(bb, 5) == 5
        await asyncio.sleep(0.3)
        assert len(await TocStore(bb, SCOPE).placed([e.id for e in good])) == 5
        assert w.plugin.counters()["errors"] >= 1
        left = await bb.client.xpending(PartitionKeys(p).bus, "timeline")
        dlq = await bb.client.xlen(PartitionKeys(p).dlq)
        assert left["pending"] + dlq == 5  # the bad scope's events only
    finally:
        await w.stop()


async def _buffered_by_an_edge_runner(bb: Blackboard, n: int,
                                      garble: bool = False) -> tuple[PartitionKeys, str]:
    """``n`` entries of SCOPE in the timeline edge's buffer, acked off the bus as the edge
    runner left them (``garble``: the scope's table first made unusable); -> the
    partition's keys and the buffer's key."""
    async with AgentMemory(bb, "a1", default_retriever=False) as mem:
        await mem.install_default_hierarchy()
    edge = next(e for e in await Registry(bb).list_edges()
                if e.transformer == "timeline" and e.source == "agent:*:ltm:episodic")
    if garble:
        await bb.client.hset(TocStore(bb, SCOPE).keys.toc, "_v", "garbled")
    es = await bb.scope(SCOPE).write_many([WriteRequest(f"old {i}") for i in range(n)])
    await bb.relays.relay_all()
    pk = PartitionKeys(bb.scope(SCOPE).partition)
    await bb.ensure_groups(["timeline"])
    await bb.client.xgroup_setid(pk.bus, "timeline", "$")  # the edge runner had acked them
    key = pk.pending(edge.id, "agent:a1:toc")
    await bb.client.rpush(key, *[BufferItem(e.created_at, SCOPE, e.id).encode() for e in es])
    await bb.client.sadd(pk.pendings, key)
    return pk, key


async def test_items_an_edge_runner_buffered_are_placed(bb: Blackboard) -> None:
    # Before this role read the buses itself, it was an edge runner: its buffers may hold
    # items already acked off the bus (an upgrade, or an older worker beside). They are
    # placed and the buffers emptied.
    pk, key = await _buffered_by_an_edge_runner(bb, 4)
    w = Worker(bb, "timeline", FAST)
    await w.start()
    try:
        assert await _count(bb, 4) == 4
        for _ in range(100):
            if not await bb.client.exists(key):
                break
            await asyncio.sleep(0.05)
        assert not await bb.client.exists(key) and not await bb.client.sismember(pk.pendings,
                                                                                 key)
    finally:
        await w.stop()


async def test_buffered_items_that_cannot_be_placed_go_to_the_dlq(bb: Blackboard) -> None:
    pk, key = await _buffered_by_an_edge_runner(bb, 3, garble=True)
    w = Worker(bb, "timeline", FAST)
    await w.start()
    try:
        for _ in range(200):
            if await bb.client.xlen(pk.dlq):
                break
            await asyncio.sleep(0.05)
        assert await bb.client.xlen(pk.dlq) == 1  # the batch, after max_failures tries
        assert not await bb.client.exists(key)
    finally:
        await w.stop()
