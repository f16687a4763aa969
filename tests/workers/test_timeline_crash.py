"""The ``timeline`` role killed with kill -9 at its worst moment, after placing a read's
entries and before acking it, and entries written while no timeline worker runs: the
restarted worker places every entry once (the nodes' counts equal the entries)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest
from workers_support import WorkerProcs

from blackboard import Blackboard, WriteRequest
from blackboard.keys import PartitionKeys
from blackboard.toc import TocStore
from memory.registry import Registry
from memory.subscriptions import MemorySubscription, Trigger
from retrieval.toc import Level, TocNode

pytestmark = pytest.mark.process

AGENTS = ("k1", "k2", "k3")


def _scope(a: str) -> str:
    return f"agent:{a}:ltm:episodic"


async def _nodes(bb: Blackboard, scope: str) -> dict[str, TocNode]:
    snap = await TocStore(bb, scope).read_all()
    return {i: n for i, raw in snap.nodes.items()
            if (n := TocNode.from_json(scope, i, raw)) is not None}


async def _placed(bb: Blackboard) -> int:
    n = 0
    for a in AGENTS:
        root = (await _nodes(bb, _scope(a))).get("root")
        n += root.count if root else 0
    return n


async def _unacked(bb: Blackboard) -> int:
    n = 0
    for p in range(bb.partitions):
        for g in await bb.client.xinfo_groups(PartitionKeys(p).bus):
            if g["name"] in (b"timeline", "timeline"):
                n += int(g["pending"]) + int(g.get("lag") or 0)
    return n


async def _until(pred: Callable[[], Awaitable[bool]], within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if await pred():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {within_s}s waiting for {what}")


async def _write(bb: Blackboard, per_agent: int, tag: str) -> list[str]:
    ids: list[str] = []
    for a in AGENTS:
        es = await bb.scope(_scope(a)).write_many(
            [WriteRequest(f"{tag} {i}: {a} checked the pump {i % 7}") for i in range(per_agent)])
        ids += [e.id for e in es]
    return ids


async def test_kill_9_after_placing_before_acking_and_writes_while_down(
        redis_url: str, worker_procs: WorkerProcs) -> None:
    async with Blackboard.connect(redis_url, partitions=4) as bb:
        reg = Registry(bb)
        await reg.save_edge(MemorySubscription(
            "agent:*:ltm:episodic", "agent:{1}:toc", "timeline",
            trigger=Trigger.any_of(Trigger.count(100), Trigger.age(5))))
        await reg.aclose()
        await bb.ensure_groups(["timeline"])
        # Each read pauses 30 s between placing its entries and acking them: the kill
        # lands after the table changed and before the bus knows it.
        w = worker_procs.start("timeline", BLACKBOARD_WORKER_CRASH_WINDOW_MS="30000")
        first = await _write(bb, 60, "before")
        await _until(lambda: _placed_all(bb, len(first)), 30, "the first entries placed")
        assert await _unacked(bb) > 0  # placed, not acked: the worst moment
        worker_procs.kill(w)
        later = await _write(bb, 40, "while down")  # no timeline worker runs
        await bb.relays.relay_all()
        worker_procs.start("timeline")  # the replay, then what was written meanwhile

        async def done() -> bool:
            return await _unacked(bb) == 0 and await _placed(bb) >= len(first) + len(later)
        await _until(done, 60, "every entry placed and acked")
        await asyncio.sleep(0.3)  # a double placement would show now
        for a in AGENTS:
            scope = _scope(a)
            nodes = await _nodes(bb, scope)
            segs = [n for n in nodes.values() if n.level is Level.SEGMENT]
            entries = [e for s in segs for e in s.entries]
            held = {e.id for e in await bb.scope(scope).entries(limit=None)}
            assert len(entries) == len(set(entries)) == len(held) == 100
            assert set(entries) == held
            assert nodes["root"].count == sum(s.count for s in segs) == 100
            for level in (Level.DAY, Level.WEEK, Level.MONTH, Level.YEAR):
                assert sum(n.count for n in nodes.values() if n.level is level) == 100
            assert await bb.client.hlen(TocStore(bb, scope).keys.toc_placed) == 100


async def _placed_all(bb: Blackboard, n: int) -> bool:
    return await _placed(bb) >= n
