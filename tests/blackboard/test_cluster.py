"""Redis Cluster specifics: one slot per partition, partitions spread over every master.

Most substrate tests also run on the cluster through the ``board`` fixture; this file
covers what only a cluster can show.
"""

from __future__ import annotations

import asyncio
import contextlib

import pytest
import redis
from redis.cluster import key_slot

from blackboard import Blackboard, EventType
from blackboard.server import RedisClusterServer

pytestmark = pytest.mark.cluster


async def test_scope_keys_share_one_slot(cbb: Blackboard) -> None:
    s = cbb.scope("agent:a1:working")
    keys = [*s.keys.script_keys()[1:], s.keys.entry("X"), s.keys.tag_set("t"), s.keys.part.dlq]
    assert len({key_slot(k.encode()) for k in keys}) == 1
    assert cbb.cluster


async def test_flow_across_all_masters(cbb: Blackboard, cluster: RedisClusterServer) -> None:
    # One scope per partition: the 8 partitions' slots land on all three masters.
    scopes: dict[int, str] = {}
    i = 0
    while len(scopes) < cbb.partitions:
        sid = f"agent:n{i}:working"
        scopes.setdefault(cbb.scope(sid).partition, sid)
        i += 1
    written: dict[str, str] = {}
    for sid in scopes.values():
        s = cbb.scope(sid)
        for e in await s.write_many([{"n": 1}, {"n": 2}]):
            written[e.id] = sid
        await s.write("short", ttl=0.01, tags={"tmp"})
    rc = redis.RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
    holders = {rc.get_node_from_key(f"bb:{{p{p}}}:bus").port for p in scopes}
    assert all(rc.exists(f"bb:{{p{p}}}:bus") for p in scopes)
    rc.close()
    assert len(holders) == 3

    await asyncio.sleep(0.05)
    rep = await cbb.sweep()
    assert rep.expired == dict.fromkeys(scopes.values(), 1)
    for sid in scopes.values():
        s = cbb.scope(sid)
        assert await s.count() == 2 and await s.tags() == {}

    got = []
    async with contextlib.aclosing(cbb.consume("agg", "w", block_ms=50)) as it:
        while len(got) < 4 * len(scopes):
            b = await asyncio.wait_for(it.__anext__(), 10)
            got += b.events
            await b.ack()
    kinds = {(e.type, e.scope) for e in got}
    assert {e.entry_id for e in got if e.type == EventType.WRITTEN} >= set(written)
    assert all((EventType.EXPIRED, sid) in kinds for sid in scopes.values())
    trimmed = await cbb.trim()
    assert trimmed.total == 3 * len(scopes)  # all but the last delivered event of each bus
