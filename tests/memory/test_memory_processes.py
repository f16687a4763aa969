"""Real processes: a team scope shared across agent processes; capacity under
concurrent writers; cost of list_tags/stats/memory_map independent of entry count."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from blackboard import Blackboard, EventType, WriteRequest
from memory import AgentMemory, MemoryLevel, default_config

pytestmark = pytest.mark.process  # agent processes

ROOT = Path(__file__).resolve().parents[2]

OBSERVER = r"""
import asyncio, sys
from pathlib import Path
from blackboard import Blackboard
from memory import AgentMemory

async def main(url, ready, out):
    async with Blackboard.connect(url) as bb, AgentMemory(bb, "b", teams=["t"]) as mem:
        got = asyncio.get_running_loop().create_future()
        def handler(ev):
            if not got.done():
                got.set_result(ev)
        h = mem.on_change("team:t", handler, block_ms=100)
        await h.ready()
        Path(ready).write_text("ready")
        ev = await asyncio.wait_for(got, 20)
        Path(out).write_text(f"{ev.scope} {ev.entry_id} {ev.type}")

asyncio.run(main(*sys.argv[1:]))
"""

WRITER = r"""
import asyncio, sys
from blackboard import Blackboard
from memory import AgentMemory

async def main(url, agent, n):
    async with Blackboard.connect(url) as bb, AgentMemory(bb, agent, teams=["t"]) as mem:
        for i in range(int(n)):
            e = await mem.store({"i": i}, level=None if agent.startswith("team") else "working",
                                team="t" if agent.startswith("team") else None)
        print(e.id)

asyncio.run(main(*sys.argv[1:]))
"""

CAPACITY = r"""
import asyncio, sys
from blackboard import Blackboard
from memory import AgentMemory

async def main(url, n, start):
    async with Blackboard.connect(url) as bb, AgentMemory(bb, "a1") as mem:
        while not __import__("os").path.exists(start):
            await asyncio.sleep(0.005)
        for i in range(int(n)):
            await mem.store({"i": i}, level="working")

asyncio.run(main(*sys.argv[1:]))
"""


def _spawn(code: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


async def _wait_file(p: Path, limit_s: float = 20.0) -> None:
    deadline = time.monotonic() + limit_s
    while not await asyncio.to_thread(p.exists):
        assert time.monotonic() < deadline, f"timed out waiting for {p}"
        await asyncio.sleep(0.02)


async def test_two_agent_processes_share_a_team_scope(
    bb: Blackboard, redis_url: str, tmp_path: Path
) -> None:
    ready, out = tmp_path / "ready", tmp_path / "out"
    observer = _spawn(OBSERVER, redis_url, str(ready), str(out))
    try:
        await _wait_file(ready)
        writer = _spawn(WRITER, redis_url, "team-writer", "1")
        stdout, stderr = await asyncio.to_thread(writer.communicate, timeout=30)
        assert writer.returncode == 0, stderr
        entry_id = stdout.strip()
        await _wait_file(out)
        assert out.read_text() == f"team:t {entry_id} written"
        assert (await asyncio.to_thread(observer.wait, 20)) == 0
    finally:
        observer.kill()
        observer.wait()


async def test_capacity_eviction_exact_under_concurrent_writers(
    bb: Blackboard, redis_url: str, tmp_path: Path
) -> None:
    cap, procs_n, per = 50, 4, 40
    async with AgentMemory(bb, "a1") as mem:
        await mem.registry.register_scope(default_config("agent:a1:working", max_entries=cap))
    scope = bb.scope("agent:a1:working")
    start = tmp_path / "start"
    procs = [_spawn(CAPACITY, redis_url, str(per), str(start)) for _ in range(procs_n)]
    await asyncio.sleep(0.5)  # let them connect, then release all at once
    start.write_text("go")
    peak = 0
    while any(p.poll() is None for p in procs):
        peak = max(peak, int(await bb.client.zcard(scope.keys.ix)))
        await asyncio.sleep(0.002)
    for p in procs:
        _out, err = p.communicate()
        assert p.returncode == 0, err
    total = procs_n * per
    assert peak <= cap
    assert await scope.count() == cap
    events = await scope.events()
    assert sum(e.type is EventType.WRITTEN for e in events) == total
    assert sum(e.type is EventType.EVICTED for e in events) == total - cap


def _commands(r: redis.Redis) -> int:
    stats = r.info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items()
               if not k.startswith(("cmdstat_info", "cmdstat_config")))


async def test_introspection_cost_independent_of_entries(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    async def measure(n: int) -> list[int]:
        clean_redis.flushall()
        async with AgentMemory(bb, "a1", teams=["t1"]) as mem:
            await mem.install_default_hierarchy()
            for lvl in (MemoryLevel.WORKING, MemoryLevel.STM):
                scope = bb.scope(mem.scope_for(lvl))
                await scope.set_policy(default_config(scope.id, max_entries=0).policy())
                reqs = [WriteRequest(i, tags={f"tag{i % 5}"}) for i in range(n)]
                for i in range(0, n, 2000):
                    await scope.write_many(reqs[i : i + 2000])
            await mem.store("team", level=None, team="t1", tags={"tt"})
            costs = []
            for op in (lambda: mem.list_tags(MemoryLevel.WORKING), mem.stats,
                       mem.memory_map, lambda: mem.list_tags(None)):
                clean_redis.config_resetstat()
                result = await op()
                costs.append(_commands(clean_redis))
                assert result
            stats = await mem.stats()
            assert stats["agent:a1:working"].count == n
            assert sum(stats["agent:a1:stm"].strength.counts) == n
            assert await mem.list_tags(MemoryLevel.WORKING) == {
                f"tag{i}": len(range(i, n, 5)) for i in range(5)}
            return costs

    small = await measure(10)
    large = await measure(5_000)
    larger = await measure(10_000)
    # Past the stats' sample (blackboard.pool_stats.POOL_SAMPLE) the cost is flat. A scope
    # the sample holds whole costs stats fewer commands (its strength histogram is counted
    # from the sample); the tags and the map cost the same at every size.
    assert large == larger, (large, larger)
    assert [small[0], *small[2:]] == [large[0], *large[2:]], (small, large)
    assert small[1] <= large[1], (small, large)
    assert all(c < 200 for c in larger)
