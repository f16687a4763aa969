"""Scope mutations: write, write_many, update, delete, idempotent retries, upsert by key."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from blackboard import (
    Blackboard,
    EntryTooLarge,
    EventType,
    InvalidTag,
    NotFound,
    ScopePolicy,
    VersionConflict,
    WriteRequest,
)
from blackboard.ids import new_ulid

SCOPE = "agent:a1:working"


async def test_write_stores_every_field(bb: Blackboard, scope_state: Any) -> None:
    s = bb.scope(SCOPE)
    src = [new_ulid(), new_ulid()]
    emb = struct.pack("<3f", 0.1, 0.2, 0.3)
    e = await s.write(
        {"text": "hello", "n": [1, 2.5, None, True]},
        tags={"action", "tool:search"},
        metadata={"agent": "a1", "nested": {"k": [1]}},
        key="fact:sky",
        ttl=60,
        importance=0.9,
        source=src,
        embedding=emb,
        embedder="test-emb",
    )
    assert e.version == 1 and e.scope == SCOPE
    assert e.expires_at - e.created_at == 60_000
    got = await s.get(e.id)
    assert got.value == {"text": "hello", "n": [1, 2.5, None, True]}
    assert got.tags == {"action", "tool:search"}
    assert got.metadata == {"agent": "a1", "nested": {"k": [1]}}
    assert got.key == "fact:sky"
    assert got.importance == 0.9
    assert got.source == tuple(src)
    assert got.embedding == emb and got.embedder == "test-emb"
    assert got.expires_at == e.expires_at and got.created_at == e.created_at
    assert got.event_id == e.event_id
    # The returned Entry (built client-side from the script reply) agrees with the stored one.
    assert e.value == got.value and e.tags == got.tags and e.key == got.key
    st = await scope_state(s)
    assert st["ix"] == {e.id} and st["exp"] == {e.id} and st["evict"] == {e.id}
    assert st["tags"] == {"action": 1, "tool:search": 1}
    assert st["keys"] == {"fact:sky": e.id}
    evs = await s.events()
    assert [(v.type, v.entry_id, v.version, v.tags) for v in evs] == [
        (EventType.WRITTEN, e.id, 1, frozenset({"action", "tool:search"}))
    ]
    assert evs[0].id == e.event_id
    # The partition bus carries the same event for workers, once the relay moved it there.
    assert await bb.client.xrange(s.keys.part.bus) == []
    await bb.relays.relay_all()
    bus = await bb.client.xrange(s.keys.part.bus)
    assert len(bus) == 1 and bus[0][1][b"entry"] == e.id.encode()
    assert await bb.scope_ids() == [SCOPE]


async def test_write_many_pipelined_and_ordered(board: Blackboard, assert_consistent: Any) -> None:
    s = board.scope(SCOPE)
    reqs = [WriteRequest({"i": i}, tags={f"t{i % 3}", "all"}) for i in range(50)] + [7, "bare"]
    out = await s.write_many(reqs)
    assert [e.value for e in out] == [{"i": i} for i in range(50)] + [7, "bare"]
    assert len({e.id for e in out}) == 52
    assert await s.count() == 52
    assert await s.tags() == {"all": 50, "t0": 17, "t1": 17, "t2": 16}
    assert [ev.entry_id for ev in await s.events()] == [e.id for e in out]
    assert await s.write_many([]) == []
    await assert_consistent(s)


async def test_write_many_validates_every_item_before_sending(
    bb: Blackboard, snapshot: Any
) -> None:
    s = bb.scope(SCOPE)
    await s.write("existing")
    before = snapshot()
    good = [WriteRequest(i) for i in range(10)]
    with pytest.raises(InvalidTag):
        await s.write_many([*good, WriteRequest("x", tags={"bad tag"})])
    with pytest.raises(EntryTooLarge):
        await s.write_many([*good, WriteRequest("x" * (bb.settings.max_entry_bytes + 1))])
    assert snapshot() == before


async def test_same_entry_id_twice_is_one_entry_one_event(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    eid = new_ulid()
    first = await s.write("v1", entry_id=eid, tags={"a"})
    again = await s.write("v2 (ignored)", entry_id=eid, tags={"b"})
    assert again.event_id == first.event_id
    assert again.value == "v1" and again.version == 1 and again.tags == {"a"}
    many = await s.write_many([WriteRequest("v3", entry_id=eid)])
    assert many[0].event_id == first.event_id
    assert await s.count() == 1 and await s.tags() == {"a": 1}
    assert len(await s.events()) == 1
    await bb.relays.relay_all()
    assert await bb.client.xlen(s.keys.part.bus) == 1


async def test_upsert_by_key_updates_in_place_and_retry_is_noop(
    bb: Blackboard, scope_state: Any, assert_consistent: Any
) -> None:
    s = bb.scope(SCOPE)
    first = await s.write("blue", key="sky", tags={"color", "old"})
    rid = new_ulid()
    up = await s.write("grey", key="sky", tags={"color", "new"}, entry_id=rid)
    assert up.id == first.id and up.version == 2 and up.value == "grey"
    again = await s.write("grey", key="sky", tags={"color", "new"}, entry_id=rid)
    assert again.id == first.id and again.version == 2
    assert (await s.get_by_key("sky")).version == 2
    assert await s.count() == 1
    assert await s.tags() == {"color": 1, "new": 1}
    types = [(e.type, e.version) for e in await s.events()]
    assert types == [(EventType.WRITTEN, 1), (EventType.UPDATED, 2)]
    st = await scope_state(s)
    assert st["keys"] == {"sky": first.id}
    await assert_consistent(s)


async def test_update_each_field(bb: Blackboard, assert_consistent: Any) -> None:
    s = bb.scope(SCOPE)
    e = await s.write("v", tags={"a", "b"}, metadata={"m": 1}, importance=0.2)
    src = [new_ulid()]
    emb = struct.pack("<2f", 1.0, 2.0)
    steps: list[tuple[dict[str, Any], Any]] = [
        ({"value": {"new": True}}, lambda x: x.value == {"new": True}),
        ({"tags": {"b", "c"}}, lambda x: x.tags == {"b", "c"}),
        ({"metadata": {"m": 2}}, lambda x: x.metadata == {"m": 2}),
        ({"importance": 0.7}, lambda x: x.importance == 0.7),
        ({"source": src}, lambda x: x.source == tuple(src)),
        ({"embedding": emb, "embedder": "e2"}, lambda x: x.embedding == emb and x.embedder == "e2"),
        ({"ttl": 30}, lambda x: 29_000 < x.expires_at - x.updated_at <= 30_000),
        ({"ttl": None}, lambda x: x.expires_at == 0),
    ]
    for version, (kw, check) in enumerate(steps, start=2):
        out = await s.update(e.id, **kw)
        assert out.version == version, kw
        assert check(out), kw
        assert check(await s.get(e.id)), kw
    assert await s.tags() == {"b": 1, "c": 1}
    assert await bb.client.zcard(s.keys.exp) == 0
    assert await bb.client.zscore(s.keys.part.ttl, SCOPE) is None
    evs = await s.events()
    assert [ev.type for ev in evs[1:]] == [EventType.UPDATED] * len(steps)
    assert [ev.version for ev in evs] == list(range(1, len(steps) + 2))
    assert evs[2].tags == {"b", "c"}
    await assert_consistent(s)


async def test_update_tags_many_times_keeps_counters_exact(
    bb: Blackboard, assert_consistent: Any
) -> None:
    s = bb.scope(SCOPE)
    es = await s.write_many([WriteRequest(i, tags={"x", f"y{i % 2}"}) for i in range(6)])
    await s.update(es[0].id, tags={"x"})
    await s.update(es[1].id, tags=set())
    await s.update(es[2].id, tags={"z", "x"})
    await s.update(es[2].id, tags={"z", "x"})  # same tags again: no double count
    assert await s.tags() == {"x": 5, "y0": 1, "y1": 2, "z": 1}
    await assert_consistent(s)


async def test_update_compare_and_set(bb: Blackboard, snapshot: Any) -> None:
    s = bb.scope(SCOPE)
    e = await s.write("v")
    await s.update(e.id, value="v2", expected_version=1)
    before = snapshot()
    with pytest.raises(VersionConflict) as ei:
        await s.update(e.id, value="lost", expected_version=1)
    assert (ei.value.expected, ei.value.actual) == (1, 2)
    assert snapshot() == before  # the conflicting update wrote nothing
    assert (await s.get(e.id)).value == "v2"


async def test_update_op_id_retry_is_noop(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    e = await s.write(0)
    op = new_ulid()
    a = await s.update(e.id, value=1, op_id=op)
    # A retry of the same operation, even with a now-stale expected_version, changes nothing.
    b = await s.update(e.id, value=1, op_id=op, expected_version=1)
    assert a.version == b.version == 2
    assert len(await s.events()) == 2


async def test_update_missing_or_expired_is_not_found(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    with pytest.raises(NotFound):
        await s.update(new_ulid(), value=1)


async def test_delete_removes_everything_and_twice_is_harmless(
    board: Blackboard, scope_state: Any
) -> None:
    s = board.scope(SCOPE)
    keep = await s.write("keep", tags={"a"})
    e = await s.write("gone", tags={"a", "b"}, key="k", ttl=100)
    assert await s.delete(e.id) is True
    assert await s.delete(e.id) is False
    with pytest.raises(NotFound):
        await s.get(e.id)
    with pytest.raises(NotFound):
        await s.get_by_key("k")
    st = await scope_state(s)
    assert st == {
        "ix": {keep.id},
        "tags": {"a": 1},
        "tag_sets": {"a": {keep.id}},
        "keys": {},
        "exp": set(),
        "evict": {keep.id},
    }
    assert not await board.client.exists(s.keys.tag_set("b"), s.keys.entry(e.id))
    assert await board.client.zscore(s.keys.part.ttl, SCOPE) is None
    evs = await s.events()
    assert [(v.type, v.entry_id, v.version, v.tags) for v in evs][-1] == (
        EventType.DELETED,
        e.id,
        1,
        frozenset({"a", "b"}),
    )
    assert len(evs) == 3  # the second delete emitted nothing


async def test_delete_expected_version(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    e = await s.write("v")
    await s.update(e.id, value="v2")
    with pytest.raises(VersionConflict):
        await s.delete(e.id, expected_version=1)
    assert (await s.get(e.id)).version == 2
    assert await s.delete(e.id, expected_version=2) is True


async def test_policy_round_trip(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    assert await s.policy() == ScopePolicy()
    p = ScopePolicy(
        max_entries=10,
        on_full="reject",
        max_entry_bytes=4096,
        ttl=12.5,
        decay_rate=0.25,
        decay_tick=2.0,
        evict_threshold=0.05,
        feed_maxlen=500,
    )
    await s.set_policy(p)
    assert await s.policy() == p


async def test_scope_default_ttl_from_policy(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    await s.set_policy(ScopePolicy(ttl=5))
    e = await s.write("v")
    assert e.expires_at - e.created_at == 5000
    f = await s.write("w", ttl=1)  # an explicit ttl wins over the default
    assert f.expires_at - f.created_at == 1000


async def test_capacity_evicts_weakest_then_oldest(
    board: Blackboard, assert_consistent: Any
) -> None:
    s = board.scope(SCOPE)
    await s.set_policy(ScopePolicy(max_entries=3))
    strong = await s.write("strong", strength=0.9)
    weak = await s.write("weak", strength=0.2, tags={"w"})
    old = await s.write("old", strength=0.5)
    new = await s.write("new", strength=0.5)  # full: the weakest goes
    assert await s.count() == 3
    assert {e.id for e in await s.entries(limit=None)} == {strong.id, old.id, new.id}
    newer = await s.write("newer", strength=0.5)  # tie at 0.5: the oldest goes
    ids = {e.id for e in await s.entries(limit=None)}
    assert ids == {strong.id, new.id, newer.id}
    evs = [ev for ev in await s.events() if ev.type == EventType.EVICTED]
    assert [(ev.entry_id, ev.tags) for ev in evs] == [(weak.id, {"w"}), (old.id, frozenset())]
    assert await s.tags() == {}
    await assert_consistent(s)


async def test_capacity_reject_writes_nothing(bb: Blackboard, snapshot: Any) -> None:
    from blackboard import ScopeFull

    s = bb.scope(SCOPE)
    await s.set_policy(ScopePolicy(max_entries=2, on_full="reject"))
    await s.write_many(["a", "b"])
    before = snapshot()
    with pytest.raises(ScopeFull):
        await s.write("c", tags={"t"}, key="k", ttl=10)
    with pytest.raises(ScopeFull):
        await s.write_many(["d"])
    assert snapshot() == before
    assert await s.count() == 2


async def test_scope_max_entry_bytes_enforced_by_script(bb: Blackboard, snapshot: Any) -> None:
    s = bb.scope(SCOPE)
    # The client's default limit (1 MiB) lets this through; only the script can refuse it.
    await s.set_policy(ScopePolicy(max_entry_bytes=100))
    ok = await s.write("x" * 50, metadata={"a": 1})
    before = snapshot()
    with pytest.raises(EntryTooLarge) as ei:
        await s.write("x" * 200)
    assert ei.value.limit == 100 and ei.value.size == 202 + 2  # '"x..x"' + '{}'
    assert snapshot() == before
    with pytest.raises(EntryTooLarge):
        await s.write_many([WriteRequest("y" * 10), WriteRequest("y" * 200)])
    # write_many is per-entry atomic: the small item went in, the large one did not.
    assert await s.count() == 2
    before = snapshot()
    with pytest.raises(EntryTooLarge):
        await s.update(ok.id, value="z" * 200)
    with pytest.raises(EntryTooLarge):
        await s.update(ok.id, metadata={"big": "m" * 200})
    assert snapshot() == before


async def test_rejected_write_over_a_dangling_key_writes_nothing(
    bb: Blackboard, snapshot: Any
) -> None:
    from blackboard import ScopeFull

    s = bb.scope(SCOPE)
    await s.set_policy(ScopePolicy(max_entries=1, on_full="reject"))
    await s.write("a")
    # A key pointing at an entry that no longer exists (repaired lazily by the next write).
    await bb.client.hset(s.keys.keys, "k", new_ulid())
    before = snapshot()
    with pytest.raises(ScopeFull):
        await s.write("b", key="k")
    assert snapshot() == before  # the script checked everything before its first write
    await s.set_policy(ScopePolicy())
    e = await s.write("b", key="k")
    assert (await s.get_by_key("k")).id == e.id


async def test_update_of_text_drops_a_stale_embedding(bb: Blackboard) -> None:
    import numpy as np

    s = bb.scope("agent:emb:stm")
    vec = np.ones(4, dtype=np.float32).tobytes()
    e = await s.write("old text", embedding=vec, embedder="hash-4")
    kept = await s.update(e.id, importance=0.9)  # not a change of text: the vector stays
    assert kept.embedding == vec and kept.embedder == "hash-4"
    changed = await s.update(e.id, value="new text")
    assert changed.embedding is None and changed.embedder is None
    fresh = await s.update(e.id, value="newer", embedding=vec, embedder="hash-4")
    assert fresh.embedding == vec


async def test_supersede_retires_the_holder_compare_and_set(
    bb: Blackboard, snapshot: Any, assert_consistent: Any
) -> None:
    """A superseding write with ``retire`` rewrites the replaced entry's status (metadata
    and value) in the same script, only if the key's holder is still the one it read."""
    from blackboard.request import Retire

    s = bb.scope(SCOPE)
    old = await s.write({"claim": "x", "status": "active"}, key="k", metadata={"status": "active"})
    stale = Retire(old.id, old.version + 1, {"status": "superseded"})
    before = snapshot()
    with pytest.raises(VersionConflict):  # the holder is at another version
        await s.write({"claim": "y"}, key="k", key_mode="supersede", retire=stale)
    with pytest.raises(VersionConflict):  # another entry holds the key
        await s.write({"claim": "y"}, key="k", key_mode="supersede",
                      retire=Retire(new_ulid(), 1, {"status": "superseded"}))
    assert snapshot() == before  # a refused retirement wrote nothing
    new = await s.write({"claim": "y", "status": "active"}, key="k", key_mode="supersede",
                        retire=Retire(old.id, old.version, {"status": "superseded", "by": "n"},
                                      {"claim": "x", "status": "superseded"}))
    got = await s.get(old.id)
    assert got.superseded_by == new.id and "superseded" in got.tags
    assert got.metadata == {"status": "superseded", "by": "n"}
    assert got.value == {"claim": "x", "status": "superseded"}
    assert (await s.get_by_key("k")).id == new.id
    await assert_consistent(s)


async def test_supersede_retires_a_holder_under_a_former_key(
    bb: Blackboard, snapshot: Any, assert_consistent: Any
) -> None:
    """A holder stored under a former form of the key (a belief key from before kinds
    joined it) is retired by the write that takes the new key, compare-and-set; once the
    new key has a live holder, a second such write is refused and writes nothing."""
    from blackboard.request import Retire

    s = bb.scope(SCOPE)
    old = await s.write({"claim": "x"}, key="fact:a:lives_in", metadata={"status": "active"})
    new = await s.write({"claim": "y"}, key="fact:world_fact:entity:a:lives_in",
                        key_mode="supersede",
                        retire=Retire(old.id, old.version, {"status": "superseded"},
                                      key="fact:a:lives_in"))
    got = await s.get(old.id)
    assert got.superseded_by == new.id and got.metadata == {"status": "superseded"}
    assert (await s.get_by_key("fact:world_fact:entity:a:lives_in")).id == new.id
    before = snapshot()
    with pytest.raises(VersionConflict):  # the new key has its live holder already
        await s.write({"claim": "z"}, key="fact:world_fact:entity:a:lives_in",
                      key_mode="supersede",
                      retire=Retire(got.id, got.version, {"status": "superseded"},
                                    key="fact:a:lives_in"))
    assert snapshot() == before
    await assert_consistent(s)
