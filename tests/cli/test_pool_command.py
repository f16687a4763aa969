"""`blackboard stats` shows the memory pool (issue 27 item 5): a real process, 80 columns
and ``--json``."""

from __future__ import annotations

import asyncio
import json

import pytest
import redis
from cli_support import cli

from blackboard import Blackboard
from memory import AgentMemory, MemoryLevel

pytestmark = pytest.mark.process  # the CLI as a process (cli_support.cli)


async def _seed(url: str) -> None:
    async with Blackboard.connect(url) as bb, AgentMemory(bb, "a1", ["ops"]) as mem:
        for i in range(3):
            await mem.store(f"step {i}", tags={"action"})
        await mem.store("pooled", level=None, team="ops", tags={"summary"})
        gone = await mem.store("duplicate", level=MemoryLevel.STM)
        await bb.scope("agent:a1:stm").delete(gone.id, merged=True)


def test_stats_shows_the_pool(redis_url: str, clean_redis: redis.Redis) -> None:
    asyncio.run(_seed(redis_url))
    r = cli("stats", "--json", "--redis-url", redis_url)
    assert r.code == 0, r.err
    pool = {s["scope"]: s for s in json.loads(r.out)["pool"]}
    assert pool["agent:a1:working"]["count"] == 3
    assert pool["agent:a1:working"]["agents"] == {"a1": 3}
    assert pool["agent:a1:working"]["tags"] == {"action": 3}
    assert pool["team:ops"]["agents"] == {"a1": 1}
    assert pool["agent:a1:stm"]["evicted_total"] == 1
    assert pool["agent:a1:stm"]["removed"]["merged"] == 1
    r = cli("stats", "--redis-url", redis_url)
    assert r.code == 0, r.err
    assert all(len(ln) <= 80 for ln in r.out.splitlines()), r.out
    assert "memory pool: 4 entries in 3 of" in r.out, r.out
    row = next(ln for ln in r.out.splitlines() if ln.startswith("agent:a1:working"))
    assert row.split()[1:4] == ["3", "0", "1.00"] and "action 3" in row and "a1 3" in row
