"""Quotas (docs/security.md "Quotas"): the write scripts refuse a write that would take a
scope or its owner past a quota, whole, and every script that adds, changes or removes a
live entry keeps the counters true; `blackboard check` rebuilds them and finds the keys an
agent invented under its prefix with raw commands."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from blackboard import Blackboard, ScopePolicy
from blackboard import keys as K
from blackboard.errors import QuotaExceeded
from blackboard.quotas import COUNTED_FIELDS, OwnerQuota, owner_of, set_owner_quota
from blackboard.request import Retire

SCOPE = "agent:a1:working"


async def _truth(bb: Blackboard, scope: str) -> tuple[int, int]:
    """Live entries and their counted bytes, read from the entries themselves."""
    s = bb.scope(scope)
    ids = [i.decode() for i in await bb.client.zrange(s.keys.ix, 0, -1)]
    n = 0
    for i in ids:
        for f in COUNTED_FIELDS:
            n += await bb.client.hstrlen(s.keys.entry(i), f)
    return len(ids), n


async def _counters(bb: Blackboard, scope: str) -> tuple[int, int, int]:
    """(scope bytes, owner entries, owner bytes) as the scripts keep them."""
    s = bb.scope(scope)
    sb = int(await bb.client.hget(s.keys.usage, "bytes") or 0)
    owner = owner_of(scope)
    assert owner
    oe, ob = await bb.client.hmget(s.keys.part.owned(owner), "entries", "bytes")
    return sb, int(oe or 0), int(ob or 0)


async def _assert_true(bb: Blackboard, scope: str = SCOPE) -> None:
    n, b = await _truth(bb, scope)
    assert await _counters(bb, scope) == (b, n, b)


async def test_counters_stay_true_through_every_path(board: Blackboard) -> None:
    bb = board  # one Redis, and the cluster (the derived keys share the scope's slot)
    s = bb.scope(SCOPE)
    await s.set_policy(ScopePolicy(max_entries=3))
    a = await s.write({"text": "a" * 100}, tags={"t"}, key="k1")
    await _assert_true(bb)
    await s.write({"text": "b" * 300}, tags={"t", "u"}, key="k1")  # upsert in place
    await _assert_true(bb)
    c = await s.write({"text": "c"}, key="k1", key_mode="supersede")  # old one tagged superseded
    await _assert_true(bb)
    # superseded with its metadata and value rewritten (retire): the byte counts follow
    await s.write({"text": "d"}, key="k1", key_mode="supersede",
                  retire=Retire(c.id, c.version, {"status": "superseded", "pad": "q" * 70},
                                {"text": "c", "status": "superseded"}))
    await _assert_true(bb)
    await s.update(a.id, value="x" * 1000, tags={"v"}, metadata={"m": "y" * 50})
    await _assert_true(bb)
    for i in range(4):  # capacity eviction (max_entries 3)
        await s.write({"i": i, "pad": "p" * i * 40})
    await _assert_true(bb)
    ids = [i.decode() for i in await bb.client.zrange(s.keys.ix, 0, -1)]
    assert await s.delete(ids[0])
    await _assert_true(bb)
    assert not await s.delete(ids[0])  # twice: nothing moves
    await _assert_true(bb)
    await s.write({"short": 1}, ttl=0.05)
    await s.write({"short": 2}, ttl=0.05)
    await asyncio.sleep(0.1)
    await bb.sweep()
    await _assert_true(bb)
    d = bb.scope("agent:a1:decaying")
    await d.set_policy(ScopePolicy(decay_rate=0.9, decay_tick=0.01, evict_threshold=0.5))
    await d.write({"weak": 1})
    await asyncio.sleep(0.05)
    p = d.keys.partition
    assert await bb.upkeep(p).prune("agent:a1:decaying", "decay", 100, False, "test") == (1, 1)
    await _assert_true(bb, "agent:a1:decaying")


async def _state(bb: Blackboard) -> dict[bytes, Any]:
    """Every key's value read back (not DUMP: a large hash is a dict whose DUMP order
    moves with incremental rehashing on mere reads); feeds by length."""
    c, out = bb.client, {}
    async for k in c.scan_iter(count=1000):
        t = (await c.type(k)).decode()
        out[k] = {"hash": c.hgetall, "zset": lambda k: c.zrange(k, 0, -1, withscores=True),
                  "set": c.smembers, "list": lambda k: c.lrange(k, 0, -1),
                  "string": c.get, "stream": c.xlen}[t](k)
        out[k] = await out[k]
    return out


async def test_scope_bytes_quota_refuses_whole(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    await s.set_policy(ScopePolicy(max_bytes=2000))
    e = await s.write("x" * 1500)
    before = await _state(bb)
    with pytest.raises(QuotaExceeded) as ei:
        await s.write("y" * 600)
    q = ei.value
    assert (q.quota, q.limit) == ("scope_bytes", 2000)
    # the value as JSON (1502), metadata '{}', tags '[]', source '[]'
    assert (q.use, q.need) == (1508, 608) and not q.never_fits
    with pytest.raises(QuotaExceeded) as ei:
        await s.update(e.id, value="z" * 2100)
    assert ei.value.never_fits
    assert await _state(bb) == before  # nothing written
    await s.update(e.id, value="z" * 100)  # shrinking always passes
    await s.write("y" * 600)
    await _assert_true(bb)


async def test_owner_quota_counts_every_scope_of_the_owner(bb: Blackboard) -> None:
    await set_owner_quota(bb, "agent:a1", OwnerQuota(entries=3, bytes=0))
    p0 = K.partition_of("agent:a1:s0", bb.partitions)
    names = [f"agent:a1:s{i}" for i in range(200)]
    same = [n for n in names if K.partition_of(n, bb.partitions) == p0]
    other = [n for n in names if K.partition_of(n, bb.partitions) != p0]
    for n in same[:3]:
        await bb.scope(n).write(n)
    with pytest.raises(QuotaExceeded) as ei:
        await bb.scope(same[3]).write("one more")
    assert (ei.value.quota, ei.value.limit, ei.value.use, ei.value.need) == (
        "agent_entries", 3, 3, 1)
    # The bound (docs/security.md "Quotas"): the limit holds per partition.
    if other:
        await bb.scope(other[0]).write("another partition has its own count")
    await bb.scope("agent:a2:working").write("another agent is not charged")
    await bb.scope("collective").write("nobody's quota")
    await set_owner_quota(bb, "team:t1", OwnerQuota(entries=0, bytes=10))
    with pytest.raises(QuotaExceeded, match="team_bytes"):
        await bb.scope("team:t1:working").write("x" * 20)


async def test_a_tampered_counter_refuses_whole_and_check_rebuilds(board: Blackboard) -> None:
    bb = board
    s = bb.scope(SCOPE)
    await s.write("a")
    await bb.client.hset(s.keys.usage, "bytes", "lots")
    from blackboard import ScopeDamaged
    with pytest.raises(ScopeDamaged):
        await s.write("b")
    await bb.client.hset(s.keys.part.owned("agent:a1"), "bytes", "-999999")
    report = await bb.check(repair=True)
    assert {d.index for d in report.drift} >= {"usage", "owned"}
    await _assert_true(bb)
    assert (await bb.check()).ok


async def test_invented_keys_reported_and_removed(board: Blackboard) -> None:
    bb = board
    s = bb.scope(SCOPE)
    await s.write("legit", tags={"t"})
    base = K.PartitionKeys(s.keys.partition).base
    junk = [f"{s.keys.prefix}junk", f"{base}:s:agent:a1:stash", f"{s.keys.prefix}e:not an id"]
    for k in junk:
        await bb.client.set(k, "x" * 10_000)
    report = await bb.check()
    found = {d.member: d.problem for d in report.drift if d.index == "invented"}
    assert set(found) == set(junk)
    assert all("bytes" in p for p in found.values())
    assert not report.ok
    await bb.check(repair=True)
    assert await bb.client.exists(*junk) == 0
    assert await s.count() == 1
    assert (await bb.check()).ok


def test_rest_status_413_when_the_entry_never_fits_else_507() -> None:
    from gateway.errors import status_of
    from memory.remote_decode import raise_for

    for alone, status in ((100, 507), (5000, 413)):
        exc = QuotaExceeded("agent_bytes", 1000, 950, 100, "agent:a1:working", alone=alone)
        got, body, _ = status_of(exc)
        assert (got, body.error, body.field) == (status, "QuotaExceeded", "value")
        assert "agent_bytes" in body.detail and "limit 1000" in body.detail
        with pytest.raises(QuotaExceeded) as back:  # the remote client reads it back
            raise_for(got, body.model_dump_json().encode(), {})
        assert (back.value.quota, back.value.limit, back.value.use, back.value.need,
                back.value.alone) == ("agent_bytes", 1000, 950, 100, alone)


async def test_a_scope_created_during_the_scan_is_not_deleted(bb: Blackboard) -> None:
    from blackboard.quota_check import check_invented

    s = bb.scope(SCOPE)
    await s.write("made after check read the scopes set", tags={"t"})
    seen: list[str] = []
    await check_invented(bb.client, [], bb.partitions,  # as if the scope was new
                         lambda *d: seen.append(d[2]), repair=True)
    assert seen == [] and await s.count() == 1


async def test_a_counter_that_moves_during_the_check_is_noted_not_repaired(
    bb: Blackboard,
) -> None:
    from blackboard.quota_check import _settle

    s = bb.scope(SCOPE)
    await s.write("a")
    seen: list[tuple[str, bool]] = []
    await _settle(bb.client, s.keys.usage, [123], [999], ("bytes",),
                  lambda p, harmless=False: seen.append((p, harmless)), repair=True)
    assert seen and seen[0][1] and "moved" in seen[0][0]
    await _assert_true(bb)  # untouched
