"""The registry's records (``bb.records``): scope identities and edges at their keys, the
edge compare-and-set and the edges-version bump of every change."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from blackboard import Blackboard, EdgeDefinition, ScopeRecord
from blackboard import keys as K

DEF = EdgeDefinition(source="agent:*:working", target="agent:{1}:stm", transformer="identity",
                     params='{"a": 1}', filter="{}", trigger='{"count": 1}')


async def _versions(bb: Blackboard) -> list[int]:
    return [int(v) for v in (await bb.edges_versions.read()).values()]


async def test_scope_records_at_their_keys(board: Blackboard) -> None:
    recs = board.records
    assert recs is board.records  # one per Blackboard, on its client
    assert recs.Scope._meta.database is board.client
    a = ScopeRecord("agent:a1:stm", "agent", "a1", "stm", 5)
    t = ScopeRecord("team:t1", "team", "t1", "", 7)
    for r in (a, t):
        await recs.save_scope(r)
    raw = await board.client.hgetall(K.scope_record(a.scope_id))
    assert {k.decode(): v.decode() for k, v in raw.items()} == {
        "pk": "agent:a1:stm", "scope_id": "agent:a1:stm", "kind": "agent", "owner": "a1",
        "level": "stm", "created_at": "5"}
    assert await board.client.smembers(K.SCOPE_RECORDS) == {b"agent:a1:stm", b"team:t1"}
    assert await recs.scopes(["team:t1", "team:none", "agent:a1:stm"]) == [t, a]
    assert await recs.list_scopes() == [a, t]
    assert await recs.list_scopes(owner="t1") == [t]
    assert await recs.list_scopes(owner="nobody") == []
    await recs.save_scope(replace(a, level="ltm"))
    assert await recs.scopes([a.scope_id]) == [replace(a, level="ltm")]


async def test_edge_compare_and_set_and_bumps(board: Blackboard) -> None:
    recs = board.records
    assert await recs.edge("e1") is None and await recs.list_edges() == []
    assert await recs.create_edge("e1", DEF, created_at=100, since=90) is True
    assert await _versions(board) == [1] * board.partitions
    got = await recs.edge("e1")
    assert got is not None
    assert (got.id, got.version, got.since, got.created_at, got.published) == (
        "e1", 1, 90, 100, True)
    assert EdgeDefinition(**{f: getattr(got, f) for f in DEF.__dataclass_fields__}) == DEF
    # A second creation of the same id loses and changes nothing.
    assert await recs.create_edge("e1", replace(DEF, transformer="x"), created_at=1,
                                  since=1) is False
    assert await recs.edge("e1") == got
    assert await _versions(board) == [1] * board.partitions
    # Replacement: only at the version stored; since and created_at stay.
    new = replace(DEF, trigger='{"count": 9}')
    assert await recs.replace_edge("e1", new, expected_version=7) is False
    assert await recs.replace_edge("nope", new, expected_version=1) is False
    assert await _versions(board) == [1] * board.partitions
    wins = await asyncio.gather(*(recs.replace_edge("e1", new, expected_version=1)
                                  for _ in range(2)))
    assert sorted(wins) == [False, True]
    after = await recs.edge("e1")
    assert after is not None and (after.version, after.since, after.trigger) == (
        2, 90, '{"count": 9}')
    assert await _versions(board) == [2] * board.partitions
    assert [e.id for e in await recs.list_edges()] == ["e1"]
    # Deletion unlists and bumps; a second deletion reports nothing was there.
    assert await recs.delete_edge("e1") is True
    assert await recs.edge("e1") is None and await recs.list_edges() == []
    assert not await board.client.smembers(K.EDGE_RECORDS)
    assert await recs.delete_edge("e1") is False
    assert await _versions(board) == [4] * board.partitions


async def test_publish_marks_only_a_live_record(board: Blackboard) -> None:
    recs = board.records
    await recs.create_edge("e2", DEF, created_at=1, since=1)
    await board.client.hset(K.edge_record("e2"), "published", 0)
    got = await recs.edge("e2")
    assert got is not None and got.published is False
    await recs.publish_edge("e2")
    got = await recs.edge("e2")
    assert got is not None and got.published is True
    await recs.delete_edge("e2")
    await recs.publish_edge("e2")  # removed meanwhile: no stub record left behind
    assert not await board.client.exists(K.edge_record("e2"))
    assert await _versions(board) == [4] * board.partitions
