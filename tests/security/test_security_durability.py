"""Crash durability: appendfsync always, kill -9 mid-stream, restart on the same data dir.

Every acknowledged write must be there and `check` must find the indexes in agreement
with the entries. Also: the checker finds and repairs injected drift.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from blackboard import Blackboard, WriteRequest
from blackboard.server import RedisServer

SCOPES = ["agent:a:working", "agent:b:stm", "team:t"]


@pytest.mark.redis  # starts its own redis-server
@pytest.mark.slow  # a crash test: 10,000 fsynced writes, kill -9, replay
async def test_kill_9_keeps_every_acknowledged_write(tmp_path: Path) -> None:
    srv = RedisServer(data_dir=tmp_path, appendfsync="always").start()
    acked: dict[str, set[str]] = {s: set() for s in SCOPES}
    try:
        async with Blackboard.connect(srv.url, partitions=4) as bb:
            for n in range(100):  # 10,000 entries in batches of 100
                scope = SCOPES[n % len(SCOPES)]
                es = await bb.scope(scope).write_many([
                    WriteRequest({"n": n, "i": i}, tags={f"t{i % 5}", "all"},
                                 key=f"k{n}-{i}" if i % 10 == 0 else None,
                                 ttl=3600 if i % 7 == 0 else None)
                    for i in range(100)
                ])
                acked[scope].update(e.id for e in es)

            async def stream() -> None:
                i = 0
                while True:
                    scope = SCOPES[i % len(SCOPES)]
                    e = await bb.scope(scope).write({"late": i}, tags={"late"})
                    acked[scope].add(e.id)  # acknowledged: the reply arrived
                    i += 1

            task = asyncio.ensure_future(stream())
            await asyncio.sleep(0.3)
            srv.kill()  # SIGKILL while writes are in flight
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 30)
            task.cancel()
    finally:
        srv.kill()
    assert sum(map(len, acked.values())) > 10_000
    srv2 = RedisServer(srv.port, tmp_path, appendfsync="always").start()
    try:
        async with Blackboard.connect(srv2.url) as bb:
            for scope, ids in acked.items():
                got = set(await bb.scope(scope).ids())
                assert ids <= got, f"{len(ids - got)} acknowledged writes lost in {scope}"
            report = await bb.check()
            assert report.ok, report.drift[:10]
            assert report.entries >= sum(map(len, acked.values()))
    finally:
        srv2.stop()


async def test_check_reports_and_repairs_drift(bb: Blackboard) -> None:
    s = bb.scope("agent:a:working")
    es = await s.write_many([WriteRequest(i, tags={"x", "y"}, key=f"k{i}", ttl=60)
                             for i in range(10)])
    assert (await bb.check()).ok
    c, k = bb.client, s.keys
    await c.zrem(k.ix, es[0].id)
    await c.srem(k.tag_set("x"), es[1].id)
    await c.hincrby(k.tags, "y", 5)
    await c.hdel(k.keys, "k2")
    await c.zrem(k.exp, es[3].id)
    await c.zrem(k.evict, es[4].id)
    await c.zadd(k.ix, {"01GHOST000000000000000000A": 1})
    await c.sadd(k.tag_set("ghost"), es[5].id)
    await c.zrem(k.part.ttl, s.id)
    await c.sadd(k.part.scopes, "not{a}scope")
    r = await bb.check()
    assert not r.ok
    assert {d.index for d in r.drift} >= {"ix", "tag_set", "tags", "keys", "exp", "evict",
                                          "ttl", "scopes"}
    assert (await bb.check(repair=True)).repaired
    after = await bb.check()
    assert after.ok and not after.drift, after.drift
    assert len(await s.entries(all_of={"x"}, limit=None)) == 10
    assert (await s.get_by_key("k2")).id == es[2].id
