"""bb.reads.fetch(): many entries of one partition, across scopes, in one call."""

from __future__ import annotations

import asyncio

import pytest
import redis
from redis_snapshot import snapshot_of

from blackboard import Blackboard, InvalidArgument, WriteRequest
from blackboard.reads import EntryRef


def _scopes_in_one_partition(bb: Blackboard, n: int) -> list[str]:
    by_p: dict[int, list[str]] = {}
    i = 0
    while True:
        sid = f"agent:f{i}:working"
        group = by_p.setdefault(bb.scope(sid).partition, [])
        group.append(sid)
        if len(group) == n:
            return group
        i += 1


async def test_reads_entries_across_scopes_in_order(board: Blackboard) -> None:
    a, b = _scopes_in_one_partition(board, 2)
    p = board.scope(a).partition
    ea = await board.scope(a).write_many(
        [WriteRequest({"text": "one"}, tags={"x"}, metadata={"m": 1}), "two"]
    )
    eb = await board.scope(b).write("three", key="k3", importance=0.9)
    refs = [
        EntryRef(b, eb.id),
        EntryRef(a, ea[1].id),
        EntryRef(a, "nosuchentry"),
        EntryRef(a, ea[0].id),
    ]
    got = await board.reads.fetch(p, refs)
    assert got[2] is None
    assert [e.id if e else None for e in got] == [eb.id, ea[1].id, None, ea[0].id]
    # Every field as a single get reads it.
    for ref, e in zip(refs, got, strict=True):
        if e is not None:
            assert e == await board.scope(ref.scope).get(ref.entry_id)
    assert got[0] is not None and got[0].key == "k3" and got[0].importance == 0.9
    assert got[3] is not None and got[3].tags == {"x"} and got[3].metadata == {"m": 1}


async def test_expired_entries_read_as_none(bb: Blackboard) -> None:
    (a,) = _scopes_in_one_partition(bb, 1)
    e = await bb.scope(a).write("brief", ttl=0.05)
    await asyncio.sleep(0.1)
    assert await bb.reads.fetch(bb.scope(a).partition, [EntryRef(a, e.id)]) == [None]


async def test_bad_refs_are_refused_before_redis(bb: Blackboard, clean_redis: redis.Redis) -> None:
    (a,) = _scopes_in_one_partition(bb, 1)
    p = bb.scope(a).partition
    other = next(
        f"agent:o{i}:working" for i in range(1000) if bb.scope(f"agent:o{i}:working").partition != p
    )
    await bb.scope(a).write("x")
    before = snapshot_of(clean_redis)
    for refs, match in [
        ([EntryRef(other, "abc")], "not in partition"),
        ([EntryRef(a, "bad id!")], "entry id"),
        ([EntryRef("not a scope", "abc")], "scope"),
    ]:
        with pytest.raises(InvalidArgument, match=match):
            await bb.reads.fetch(p, refs)
    assert snapshot_of(clean_redis) == before
    assert await bb.reads.fetch(p, []) == []


async def test_skip_invalid_reads_bad_refs_as_none(bb: Blackboard) -> None:
    (a,) = _scopes_in_one_partition(bb, 1)
    p = bb.scope(a).partition
    other = next(
        f"agent:o{i}:working" for i in range(1000) if bb.scope(f"agent:o{i}:working").partition != p
    )
    e = await bb.scope(a).write("x")
    refs = [EntryRef(other, "abc"), EntryRef(a, e.id), EntryRef(a, "bad id!"), EntryRef("no", "x")]
    got = await bb.reads.fetch(p, refs, skip_invalid=True)
    assert [g.id if g else None for g in got] == [None, e.id, None, None]
    assert await bb.reads.fetch(p, refs[:1], skip_invalid=True) == [None]


async def test_chosen_fields_only_and_a_bad_field_named(board: Blackboard) -> None:
    a, b = _scopes_in_one_partition(board, 2)
    [e] = await board.scope(a).write_many(
        [WriteRequest({"text": "one"}, tags={"x"}, metadata={"m": 1}, importance=0.9)])
    p = board.scope(a).partition
    full, none = await board.reads.fetch(p, [EntryRef(a, e.id), EntryRef(b, e.id)])
    [got] = await board.reads.fetch(p, [EntryRef(a, e.id)], fields=("value", "tags", "metadata"))
    assert none is None and full is not None and got is not None
    assert (got.id, got.value, got.tags, got.metadata) == (full.id, full.value, full.tags,
                                                           full.metadata)
    assert got.importance == 0.5 and full.importance == 0.9  # not read: the default
    with pytest.raises(InvalidArgument, match=r"^fields: 'nope' is not an entry field"):
        await board.reads.fetch(p, [EntryRef(a, e.id)], fields=("value", "nope"))


async def test_chosen_fields_still_hide_an_expired_entry(bb: Blackboard) -> None:
    s = "agent:f0:working"
    e = await bb.scope(s).write("brief", ttl=0.05)
    await asyncio.sleep(0.1)
    p = bb.scope(s).partition
    assert await bb.reads.fetch(p, [EntryRef(s, e.id)], fields=("value",)) == [None]
    [kept] = await bb.reads.fetch(p, [EntryRef(s, e.id)], fields=("value",), retained=True)
    assert kept is not None and kept.value == "brief"
