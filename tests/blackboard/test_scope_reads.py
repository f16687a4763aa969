"""Reads over several scopes (bb.reads: scope state, entries, feeds by scope) and the one embedding
check: each answer matches what the per-scope reads say."""

from __future__ import annotations

import pytest

from blackboard import Blackboard, InvalidArgument, ScopePolicy, WriteRequest

A, B = "agent:a1:working", "team:t1"


async def test_reads_across_scopes_match_the_scopes(bb: Blackboard) -> None:
    a, b = bb.scope(A), bb.scope(B)
    await b.set_policy(ScopePolicy(max_entries=5, ttl=30.0))
    x = await a.write("x", key="k-one")
    y = await a.write("y", key="k-two")
    z = await b.write("z")
    await bb.relays.relay_all()
    assert await bb.reads.counts([A, B, "agent:a1:stm"]) == [2, 1, 0]
    assert await bb.reads.holding(x.id, [B, A]) == [False, True]
    with pytest.raises(InvalidArgument, match="entry id"):
        await bb.reads.holding("no such id!", [A])
    assert await bb.reads.policies([A, B]) == [ScopePolicy(), await b.policy()]
    assert sorted(await a.ids_by_key_glob("k-*")) == sorted([x.id, y.id])
    assert await a.ids_by_key_glob("k-t*") == [y.id]

    newest = await bb.reads.newest_event_ids([A, B])
    assert newest == {A: await a.last_event_id(), B: await b.last_event_id()}
    first = (await a.events())[0].id
    heads = await bb.reads.heads([A, B], at={A: first}, with_ids=True)
    assert [(h.scope, h.newest, h.kept) for h in heads] == [(A, newest[A], True),
                                                           (B, newest[B], False)]
    assert heads[0].ids == (x.id, y.id) and heads[1].ids == (z.id,)
    assert heads[1].policy == await b.policy()

    got = await bb.reads.entries({A: [y.id, z.id], B: [z.id]})
    assert [e.id if e else None for e in got[A]] == [y.id, None]
    assert [e.id if e else None for e in got[B]] == [z.id]
    ranges = await bb.reads.ranges({A: (first, newest[A]), B: ("0-0", newest[B])}, count=10)
    assert [ev.entry_id for ev in ranges[A]] == [y.id]
    assert [ev.entry_id for ev in ranges[B]] == [z.id]


async def test_read_scopes_keeps_to_one_partition(bb: Blackboard) -> None:
    other = next(s for s in (f"agent:a{i}:working" for i in range(2, 99))
                 if bb.scope(s).partition != bb.scope(A).partition)
    with pytest.raises(InvalidArgument, match="not in partition"):
        await bb.reads.events({A: "0-0", other: "0-0"}, bb.scope(A).partition,
                          count=10, block_ms=10)
    e = await bb.scope(A).write("x")
    await bb.relays.relay_all()
    got = await bb.reads.events({A: "0-0"}, bb.scope(A).partition, count=10, block_ms=10)
    assert [(s, ev.entry_id) for s, ev in got] == [(A, e.id)]


@pytest.mark.parametrize("bad", [b"abc", "abcd", 4])
async def test_one_embedding_check_everywhere(bb: Blackboard, bad: object) -> None:
    s = bb.scope(A)
    e = await s.write("x")
    msg = "float32 bytes"
    with pytest.raises(InvalidArgument, match=msg):
        await s.write("y", embedding=bad, embedder="m")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=msg):
        await s.update(e.id, embedding=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=msg):
        await s.set_embeddings([(e.id, e.version, bad)], "m")  # type: ignore[list-item]
    # Empty bytes clear an embedding on update, but attach nothing.
    with pytest.raises(InvalidArgument, match=msg):
        await s.set_embeddings([(e.id, e.version, b"")], "m")
    assert (await s.update(e.id, embedding=b"")).embedding in (None, b"")


async def test_a_limited_listing_reads_what_the_limit_needs(
    bb: Blackboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    sc = bb.scope("agent:a1:ltm:episodic")
    es = await sc.write_many([{"text": f"m{i}"} for i in range(300)])
    sizes: list[int] = []
    real = type(sc).get_many

    async def spy(self, ids):  # type: ignore[no-untyped-def]
        sizes.append(len(ids))
        return await real(self, ids)

    monkeypatch.setattr(type(sc), "get_many", spy)
    got = await sc.entries(limit=20)
    assert [e.id for e in got] == [e.id for e in es[::-1][:20]] and sizes == [20]
    sizes.clear()
    assert len(await sc.entries(limit=None)) == 300 and max(sizes) == 256
    # filtered out after the read: the listing reads on, in pages of what it still needs
    tagged = await sc.write_many([WriteRequest(f"t{i}", tags={"t", "skip"} if i >= 290 else {"t"})
                                  for i in range(300)])
    sizes.clear()
    got = await sc.entries(all_of={"t"}, none_of={"skip"}, limit=20)
    assert [e.id for e in got] == [e.id for e in tagged[:290][::-1][:20]]
    assert sizes == [20, 10]  # 10 of the newest 20 skipped: 10 more read
