"""Pool statistics (issue 27 item 5): evicted_total by reason, counted by the scripts that
remove; entries per source agent; average strength."""

from __future__ import annotations

import asyncio

import pytest

from blackboard import Blackboard, ScopeDamaged
from blackboard.entry import ScopePolicy
from blackboard.pool_stats import pool_of


async def _pool(bb: Blackboard, scope: str) -> dict:
    [st] = await bb.reads.stats([scope])
    assert st.pool is not None
    return st.to_json()


async def test_every_removal_is_counted_once_by_reason(bb: Blackboard) -> None:
    s = bb.scope("agent:a1:stm")
    await s.set_policy(ScopePolicy(max_entries=4, on_full="evict"))
    for i in range(5):  # one past capacity: the weakest (ties: the oldest) goes
        await s.write(f"step {i}")
    for i in range(2):
        await s.write(f"short {i}", ttl=0.05)  # each evicts one more for room
    kept = await s.write("kept", key="k")  # and one more
    await asyncio.sleep(0.1)
    assert (await bb.sweep()).expired == {"agent:a1:stm": 2}
    assert (await bb.sweep()).expired == {}  # nothing twice
    live = await s.ids()
    dup = next(i for i in live if i != kept.id)
    assert await s.delete(dup, merged=True)  # the dedupe job's delete
    assert not await s.delete(dup, merged=True)  # already gone: not counted again
    assert await s.delete(kept.id)  # forget is not an eviction
    d = bb.scope("agent:a1:ltm:semantic")
    await d.set_policy(ScopePolicy(decay_rate=0.9, decay_tick=0.01, evict_threshold=0.5))
    await d.write("fades")
    await asyncio.sleep(0.05)
    up = bb.upkeep(d.keys.partition)
    assert await up.prune(d.id, "decay", 100, False, "test") == (1, 1)
    assert await up.prune(d.id, "decay", 100, False, "test") == (0, 0)

    got = await _pool(bb, "agent:a1:stm")
    assert got["removed"] == {"expired": 2, "decayed": 0, "capacity": 4, "merged": 1}
    assert got["evicted_total"] == 7 and got["count"] == 0
    got = await _pool(bb, "agent:a1:ltm:semantic")
    assert got["removed"]["decayed"] == 1 and got["evicted_total"] == 1
    assert (await bb.check()).ok


async def test_agents_categories_and_average_strength(bb: Blackboard) -> None:
    t = bb.scope("team:ops")
    await t.write("a1 one", tags={"discovery"}, author="a1", strength=1.0)
    await t.write("a1 two", tags={"discovery", "plan"}, author="a1", strength=0.5)
    await t.write("a2 one", tags={"challenge"}, author="a2", strength=0.6)
    await t.write("pooled by a worker", strength=0.9)
    got = await _pool(bb, "team:ops")
    assert got["agents"] == {"": 1, "a1": 2, "a2": 1}
    assert got["tags"] == {"challenge": 1, "discovery": 2, "plan": 1}  # per category
    assert got["avg_strength"] == pytest.approx(0.75)
    assert got["sampled"] == 4 and got["evicted_total"] == 0
    a = bb.scope("agent:a1:working")
    for _ in range(3):
        await a.write("mine")
    got = await _pool(bb, "agent:a1:working")
    assert got["agents"] == {"a1": 3} and got["avg_strength"] == 1.0
    empty = await _pool(bb, "agent:nobody:working")
    assert empty["agents"] == {} and empty["avg_strength"] is None
    assert empty["removed"] == {"expired": 0, "decayed": 0, "capacity": 0, "merged": 0}


def test_average_strength_decays_in_closed_form() -> None:
    pol = ScopePolicy(decay_rate=0.5, decay_tick=1.0, evict_threshold=0.01)
    rows = [(b"a1", b"1.0", b"0", b"0", b"0"), (b"a2", b"1.0", b"1000", b"0", b"0"),
            (b"a2", None, None, None, None), (b"a3", b"1.0", b"0", b"0", b"500")]
    p = pool_of("team:t", 2, {b"merged": b"2", b"junk": b"x"}, rows, pol, now=2000)
    assert p.avg_strength == pytest.approx((0.25 + 0.5) / 2)  # gone and expired skipped
    assert p.agents == {"a1": 1, "a2": 1} and p.sampled == 2 and p.evicted_total == 2


async def test_a_large_scope_is_sampled(bb: Blackboard, monkeypatch: pytest.MonkeyPatch) -> None:
    import blackboard.pool_stats as ps

    monkeypatch.setattr(ps, "POOL_SAMPLE", 3)
    t = bb.scope("team:big")
    for i in range(5):
        await t.write(f"e{i}", author="a1")
    got = await _pool(bb, "team:big")
    assert got["count"] == 5 and got["sampled"] == 3 and got["agents"] == {"a1": 3}
    monkeypatch.setattr(ps, "POOL_BUDGET", 4)  # a call over many scopes shares a budget
    monkeypatch.setattr(ps, "POOL_MIN", 2)
    two = await bb.reads.stats(["team:big", "team:other"])
    assert [st.pool.sampled for st in two if st.pool] == [2, 0]


async def test_a_mangled_counter_refuses_whole_and_check_repairs_it(bb: Blackboard) -> None:
    s = bb.scope("agent:a1:working")
    e = await s.write("x")
    await bb.client.hset(s.keys.removed, "expired", "lots")
    with pytest.raises(ScopeDamaged):
        await s.delete(e.id)
    assert await s.count() == 1  # nothing half-done
    rep = await bb.check()
    assert any(d.index == "removed" for d in rep.drift)
    await bb.check(repair=True)
    assert (await bb.check()).ok
    assert await s.delete(e.id)
    await bb.client.delete(s.keys.removed)
    await bb.client.set(s.keys.removed, "a string")
    with pytest.raises(ScopeDamaged):
        await s.write("y")
    await bb.check(repair=True)
    await s.write("y")


async def test_pool_counts_on_the_cluster(cbb: Blackboard) -> None:
    s = cbb.scope("team:ops")
    await s.set_policy(ScopePolicy(max_entries=2, on_full="evict"))
    for i in range(3):
        await s.write(f"e{i}", author="a1")
    e = await cbb.scope("agent:a2:stm").write("dup")
    await cbb.scope("agent:a2:stm").delete(e.id, merged=True)
    team, stm = await cbb.reads.stats(["team:ops", "agent:a2:stm"])
    assert team.pool is not None and stm.pool is not None
    assert (team.pool.removed["capacity"], team.pool.agents) == (1, {"a1": 2})
    assert stm.pool.removed["merged"] == 1 == stm.pool.evicted_total


def test_a_reinforced_entrys_strength_from_its_evict_score_is_at_most_1() -> None:
    """A reinforced entry decays more slowly than the plain rate: its crossing lies later
    than an unreinforced one's from the same strength, and read back with the plain rate
    it came out above 1 (the dashboard's map showed "avg strength 1.42")."""
    from blackboard.decay import evict_time
    from blackboard.pool_stats import strength_of_evict_score

    pol = ScopePolicy(decay_rate=0.2, decay_tick=1.0, evict_threshold=0.1)
    plain = evict_time(1.0, 0, pol.evict_threshold, pol.decay_rate, 0, 1000)
    assert strength_of_evict_score(plain, pol, now=0) == pytest.approx(1.0)
    assert strength_of_evict_score(plain, pol, now=2000) == pytest.approx(0.64)
    slow = evict_time(1.0, 0, pol.evict_threshold, pol.decay_rate, 8, 1000)
    assert slow > plain
    assert strength_of_evict_score(slow, pol, now=0) == 1.0


async def test_the_histogram_counted_from_a_whole_sample_is_the_zcounts(
        bb: Blackboard, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scope whose evict zset the pool sample read whole has its strength histogram
    counted from the sample's scores; one sampled in part, by a ZCOUNT per bucket: the
    same counts, bucket edges included, decaying or not."""
    import blackboard.pool_stats as ps

    flat = bb.scope("team:flat")
    await flat.set_policy(ScopePolicy(decay_rate=0.0))
    decaying = bb.scope("agent:a1:stm")
    await decaying.set_policy(ScopePolicy(decay_rate=0.3, decay_tick=60.0,
                                          evict_threshold=0.1))
    for i, s in enumerate((0.0, 0.1, 0.2, 0.2, 0.4, 0.5, 0.6, 0.8, 0.99, 1.0)):
        await flat.write(f"f{i}", author="a1", strength=s)
        await decaying.write(f"d{i}", strength=max(s, 0.05))
    await decaying.reinforce((await decaying.entries(limit=1))[0].id)
    ids = ["team:flat", "agent:a1:stm"]
    whole = await bb.reads.stats(ids)
    assert all(st.pool and st.pool.sampled == 10 for st in whole)
    assert whole[0].strength.counts == (2, 2, 2, 1, 3)  # edges in the upper bucket
    monkeypatch.setattr(ps, "POOL_SAMPLE", 10)  # ten asked, ten there: not known whole
    monkeypatch.setattr(ps, "POOL_MIN", 10)
    part = await bb.reads.stats(ids)
    assert [st.strength for st in part] == [st.strength for st in whole]
