"""TTL: expiry is visible at once, and the sweep removes entries with every index member."""

from __future__ import annotations

import asyncio
from typing import Any

import redis

from blackboard import Blackboard, EventType
from blackboard.keys import PartitionKeys

SCOPE = "agent:a1:working"


async def test_sweep_removes_every_index_member_and_emits_expired(
    board: Blackboard, scope_state: Any, assert_consistent: Any
) -> None:
    s = board.scope(SCOPE)
    live = await s.write("live", tags={"t"}, key="k-live", ttl=3600)
    doomed = [await s.write({"i": i}, tags={"t", f"u{i}"}, key=f"k{i}", ttl=0.05) for i in range(3)]
    await asyncio.sleep(0.1)
    dry = await board.sweep(dry_run=True)
    assert dry.dry_run and dry.expired == {SCOPE: 3}
    assert await board.client.zcard(s.keys.ix) == 4  # the dry run removed nothing

    rep = await board.sweep()
    assert rep.expired == {SCOPE: 3} and rep.total == 3 and not rep.dry_run
    st = await scope_state(s)
    assert st == {
        "ix": {live.id},
        "tags": {"t": 1},
        "tag_sets": {"t": {live.id}},
        "keys": {"k-live": live.id},
        "exp": {live.id},
        "evict": {live.id},
    }
    c = board.client
    # No consumer group has taken the entries in yet: they are retired, not deleted — gone
    # for readers, kept for the dataflow, listed for the reaper.
    retired = {f"{SCOPE}|{d.id}".encode() for d in doomed}
    for d in doomed:
        assert await c.hget(s.keys.entry(d.id), "retired") == b"expired"
        assert (await s.get_many([d.id])) == [None]
    assert await c.smembers(s.keys.part.retired) == retired
    for i in range(3):
        assert not await c.exists(s.keys.tag_set(f"u{i}"))
    # The scope stays scheduled for its next expiry, the live entry's.
    assert await c.zscore(s.keys.part.ttl, SCOPE) == live.expires_at
    expired = [e for e in await s.events() if e.type == EventType.EXPIRED]
    assert [(e.entry_id, e.version, set(e.tags)) for e in expired] == [
        (d.id, 1, {"t", f"u{i}"}) for i, d in enumerate(doomed)
    ]
    assert (await board.sweep()).expired == {}
    await assert_consistent(s)
    # Once every consumer group has taken their events in, the trimmer reaps them.
    await board.bus(s.partition).ensure_group("r")
    await board.relays.relay_all()
    bus = s.keys.part.bus
    for _stream, items in await c.xreadgroup("r", "w", {bus: ">"}):
        await c.xack(bus, "r", *[i for i, _ in items])
    assert (await board.trim()).reaped == {s.partition: 3}
    for d in doomed:
        assert not await c.exists(s.keys.entry(d.id))
    assert await c.smembers(s.keys.part.retired) == set()
    await assert_consistent(s)


async def test_sweep_in_pages_and_unschedules_empty_scopes(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    await s.write_many([{"i": i} for i in range(25)])
    from blackboard import WriteRequest

    await s.write_many([WriteRequest(i, ttl=0.01, tags={"x"}) for i in range(25)])
    await asyncio.sleep(0.05)
    rep = await bb.sweep(limit=10)  # three script runs of at most 10
    assert rep.expired == {SCOPE: 25}
    assert await s.count() == 25 and await s.tags() == {}
    assert await bb.client.zscore(s.keys.part.ttl, SCOPE) is None


async def test_sweep_cost_is_driven_by_the_partition_ttl_zset(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    # Many scopes, only two with expired entries: the sweep must run the expire script for
    # those two only (found through bb:{pN}:ttl), never visit the others.
    for i in range(40):
        await bb.scope(f"agent:n{i}:working").write_many([1, 2, 3])
    await bb.scope("agent:far:working").write("later", ttl=3600)
    due = ["agent:x1:working", "agent:x2:working"]
    for sid in due:
        await bb.scope(sid).write("soon", ttl=0.01)
    await asyncio.sleep(0.05)
    clean_redis.config_resetstat()
    rep = await bb.sweep()
    assert rep.expired == dict.fromkeys(due, 1)
    stats = clean_redis.info("commandstats")
    assert stats["cmdstat_evalsha"]["calls"] == len(due)
    # One ZRANGEBYSCORE per partition on the ttl zset plus one inside each script run (on
    # the scope's exp zset; commandstats counts script calls too); no SCAN/KEYS anywhere.
    assert stats["cmdstat_zrangebyscore"]["calls"] == bb.partitions + len(due)
    assert not any(k in stats for k in ("cmdstat_scan", "cmdstat_keys"))

    # And it is that zset that drives it: a due scope missing from it is not swept.
    hidden = bb.scope("agent:x3:working")
    await hidden.write("soon", ttl=0.01)
    await bb.client.zrem(PartitionKeys(hidden.partition).ttl, hidden.id)
    await asyncio.sleep(0.05)
    assert (await bb.sweep()).expired == {}
    assert await bb.client.zcard(hidden.keys.ix) == 1


async def test_sweep_only_given_partitions(bb: Blackboard) -> None:
    a, b = bb.scope("agent:a:working"), bb.scope("agent:b:working")
    assert a.partition != b.partition
    await a.write("x", ttl=0.01)
    await b.write("y", ttl=0.01)
    await asyncio.sleep(0.05)
    assert (await bb.sweep(partitions=[a.partition])).expired == {a.id: 1}
    assert (await bb.sweep()).expired == {b.id: 1}


async def test_ttl_extension_reschedules(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    e = await s.write("v", ttl=0.05)
    await s.update(e.id, ttl=3600)
    await asyncio.sleep(0.1)
    assert (await bb.sweep()).expired == {}
    assert (await s.get(e.id)).value == "v"
    assert await bb.client.zscore(s.keys.part.ttl, SCOPE) == (await s.get(e.id)).expires_at


async def test_upsert_over_expired_key_holder_writes_a_new_entry(
    bb: Blackboard, assert_consistent: Any
) -> None:
    s = bb.scope(SCOPE)
    old = await s.write("old", key="k", tags={"t"}, ttl=0.02)
    await asyncio.sleep(0.05)
    new = await s.write("new", key="k", tags={"t"})
    assert new.id != old.id and new.version == 1
    assert (await s.get_by_key("k")).id == new.id
    types = [(e.type, e.entry_id) for e in await s.events()]
    assert types[-2:] == [(EventType.EXPIRED, old.id), (EventType.WRITTEN, new.id)]
    assert await s.tags() == {"t": 1}
    await assert_consistent(s)
