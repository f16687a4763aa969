"""An agent may move another scope's place in the shared ttl / prune schedules (its own
writes need ZADD/ZREM there); the maintenance role's reschedule job puts it back."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import redis

from blackboard import Blackboard, ScopePolicy
from workers.maintenance import JOBS, Maintenance
from workers.settings import WorkerSettings

AgentBoard = Callable[..., Awaitable[Blackboard]]


async def test_reschedule_undoes_an_agents_tampering(
    bb: Blackboard, agent_board: AgentBoard, clean_redis: redis.Redis
) -> None:
    r = clean_redis
    a = await agent_board("a")
    b = await agent_board("b")
    await bb.scope("agent:b:stm").set_policy(ScopePolicy(decay_rate=0.5, decay_tick=3600))
    short = await b.scope("agent:b:working").write("gone soon", ttl=0.3)
    await b.scope("agent:b:working").write("kept", ttl=3600)
    await b.scope("agent:b:stm").write("decays")
    working, stm = bb.scope("agent:b:working").keys, bb.scope("agent:b:stm").keys
    ttl_due = r.zrange(working.exp, 0, 0, withscores=True)[0][1]
    prune_due = r.zrange(stm.evict, 0, 0, withscores=True)[0][1]
    assert r.zscore(working.part.ttl, "agent:b:working") == ttl_due
    assert r.zscore(stm.part.prune, "agent:b:stm") == prune_due

    # Agent a, confined to its own scopes, moves b's places: one gone, one pushed late.
    await a.client.zrem(working.part.ttl, "agent:b:working")
    await a.client.zadd(stm.part.prune, {"agent:b:stm": 9e15})
    await asyncio.sleep(0.4)
    assert (await bb.sweep()).total == 0  # the sweep no longer finds b's expired entry

    m = Maintenance(bb, "m1", WorkerSettings())
    assert "reschedule" in JOBS and m.interval_s("reschedule") == 300.0
    dry = [await m.reschedule(p, dry_run=True) for p in range(bb.partitions)]
    assert {s: n for rep in dry for s, n in rep.counts.items()} == {
        "agent:b:working": 1,
        "agent:b:stm": 1,
    }
    assert r.zscore(working.part.ttl, "agent:b:working") is None  # a dry run changes nothing

    done = [await m.reschedule(p) for p in range(bb.partitions)]
    assert sum(rep.total for rep in done) == 2
    assert r.zscore(working.part.ttl, "agent:b:working") == ttl_due
    assert r.zscore(stm.part.prune, "agent:b:stm") == prune_due
    rep = await bb.sweep()
    assert rep.expired == {"agent:b:working": 1}
    assert await bb.scope("agent:b:working").get_many([short.id]) == [None]
    assert r.zscore(working.part.ttl, "agent:b:working") is not None  # "kept" is still due
    # Exact already: a second pass changes nothing.
    assert sum([(await m.reschedule(p)).total for p in range(bb.partitions)]) == 0
    # A place for a scope with nothing due goes (the sweep would only visit it for nothing).
    mine = bb.scope("agent:a:working")
    await a.scope("agent:a:working").write("no ttl")
    await a.client.zadd(mine.keys.part.ttl, {"agent:a:working": 1})
    assert (await m.reschedule(mine.partition)).counts == {"agent:a:working": 1}
    assert r.zscore(mine.keys.part.ttl, "agent:a:working") is None
