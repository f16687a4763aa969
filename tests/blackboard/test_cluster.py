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
    # Writes reach the bus through the partition inbox (the relay fills the bus).
    assert all(rc.llen(f"bb:{{p{p}}}:inbox") == 3 for p in scopes)
    rc.close()
    assert len(holders) == 3

    await asyncio.sleep(0.05)
    rep = await cbb.sweep()
    assert rep.expired == dict.fromkeys(scopes.values(), 1)
    for sid in scopes.values():
        s = cbb.scope(sid)
        assert await s.count() == 2 and await s.tags() == {}

    got = []
    # The consumer's relay moves each partition's inbox to its bus, on every master.
    async with contextlib.aclosing(cbb.consume("agg", "w", block_ms=50)) as it:
        while len(got) < 3 * len(scopes):
            b = await asyncio.wait_for(it.__anext__(), 10)
            got += b.events
            await b.ack()
    assert {e.entry_id for e in got if e.type == EventType.WRITTEN} >= set(written)
    assert {e.type for e in got} == {EventType.WRITTEN}  # the bus carries content events
    for sid in scopes.values():  # expiry is on the scope's feed, for observers
        feed = await cbb.client.xrange(cbb.scope(sid).keys.feed)
        assert [f[b"type"] for _, f in feed].count(b"expired") == 1
    trimmed = await cbb.trim()
    assert trimmed.total == 2 * len(scopes)  # all but the last delivered event of each bus
