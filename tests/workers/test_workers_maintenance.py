"""Maintenance jobs against real Redis: decay and pruning against the closed-form formula,
capacity, TTL sweep, dedupe (threshold guard, provenance), trim behind the slowest group,
dry runs that change nothing, and job leases that run a job once across two workers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import numpy as np
import pytest
import redis
from redis_snapshot import snapshot_of

from blackboard import Blackboard, ScopePolicy
from blackboard import decay as D
from blackboard.keys import PartitionKeys
from workers.maintenance import Maintenance
from workers.settings import WorkerSettings

RATE, TICK_S, THRESHOLD = 0.5, 0.2, 0.1
TICK_MS = int(TICK_S * 1000)


def evalsha_calls(r: redis.Redis) -> int:
    stats = r.info("commandstats")
    return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))


async def _maint(bb: Blackboard, token: str = "m1", **kw: object) -> Maintenance:
    return Maintenance(bb, token, WorkerSettings(), **kw)  # type: ignore[arg-type]


async def _all(m: Maintenance, job: str, dry: bool) -> int:
    fn = getattr(m, job)
    return sum([(await fn(p, dry)).total for p in range(m.bb.partitions)])


def test_closed_form_equals_tick_by_tick() -> None:
    for reinf in (0, 1, 3):
        s = 0.8
        q = 1 - RATE / (1 + np.log(1 + reinf))
        for k in range(8):
            got = D.strength_at(0.8, 1000, 1000 + k * TICK_MS, RATE, reinf, TICK_MS)
            assert got == pytest.approx(s, rel=1e-12)
            s *= q
        # evict time: the strength at it is the threshold.
        t = D.evict_time(0.8, 1000, THRESHOLD, RATE, reinf, TICK_MS)
        assert D.strength_at(0.8, 1000, int(t), RATE, reinf, TICK_MS) >= THRESHOLD
        assert D.strength_at(0.8, 1000, int(t) + 2, RATE, reinf, TICK_MS) < THRESHOLD


async def test_decay_reinforce_and_prune_follow_the_formula(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    r = clean_redis
    scope = bb.scope("agent:a1:stm")
    await scope.set_policy(
        ScopePolicy(decay_rate=RATE, decay_tick=TICK_S, evict_threshold=THRESHOLD)
    )
    es = [await scope.write(f"fact {i}", strength=1.0) for i in range(4)]
    weak = await scope.write("weak fact", strength=0.3)
    keys = bb.scope_keys(scope.id)
    # Stored evict times are the closed form's.
    for e in [*es, weak]:
        got = await scope.get(e.id)
        want = D.evict_time(got.strength, got.strength_at, THRESHOLD, RATE, 0, TICK_MS)
        assert r.zscore(keys.evict, e.id) == pytest.approx(want, abs=1.0)
    # Reinforce two entries after one tick: decayed strength + boost, capped; new evict time.
    await asyncio.sleep(TICK_S)
    for e in es[:2]:
        before = await scope.get(e.id)
        s, n = await scope.reinforce(e.id, boost=0.3)
        after = await scope.get(e.id)
        assert n == 1 and after.reinforcements == 1 and after.strength == pytest.approx(s)
        decayed = D.strength_at(
            before.strength, before.strength_at, after.strength_at, RATE, 0, TICK_MS
        )
        assert s == pytest.approx(min(1.0, decayed + 0.3), abs=1e-9)
        assert decayed < 0.8  # about one tick of decay happened before the boost
        want = D.evict_time(s, after.strength_at, THRESHOLD, RATE, 1, TICK_MS)
        assert r.zscore(keys.evict, e.id) == pytest.approx(want, abs=1.0)
    # Exact strengths at given ticks after the reinforcement (read back vs closed form).
    e0 = await scope.get(es[0].id)
    q1 = 1 - RATE / (1 + np.log(2))
    for k in (1, 2, 3):
        v = D.strength_at(e0.strength, e0.strength_at, e0.strength_at + k * TICK_MS, RATE, 1,
                          TICK_MS)
        assert v == pytest.approx(e0.strength * q1**k, rel=1e-12)

    m = await _maint(bb)
    part = PartitionKeys(scope.partition)

    async def prune_until(t_ms: float) -> set[str]:
        """Prune once after ``t_ms``; the ids it removed."""
        await asyncio.sleep(max(0.0, (t_ms + 20) / 1000 - time.time()))
        before = set(await scope.ids())
        due_now = {
            x.decode() for x in r.zrangebyscore(keys.evict, "-inf", int(time.time() * 1000))
        }
        snap = snapshot_of(r)
        dry = await m.prune(scope.partition, dry_run=True)
        assert snapshot_of(r) == snap  # a dry run changes nothing
        assert dry.counts.get(scope.id, 0) >= len(due_now)
        rep = await m.prune(scope.partition)
        gone = before - set(await scope.ids())
        assert rep.counts.get(scope.id, 0) == len(gone)
        return gone

    scores = {e.id: float(r.zscore(keys.evict, e.id) or 0) for e in [*es, weak]}
    unreinforced = {es[2].id, es[3].id}
    # Before anything is due: nothing pruned.
    assert await prune_until(0) == set()
    # After the weak one's time, before the others': exactly the weak one.
    assert await prune_until(scores[weak.id]) == {weak.id}
    assert r.zscore(part.prune, scope.id) == pytest.approx(min(scores[i] for i in unreinforced))
    # After the unreinforced ones' times: exactly those (reinforcement kept the others).
    gone = await prune_until(max(scores[i] for i in unreinforced))
    assert gone == unreinforced
    assert all(scores[i] > time.time() * 1000 for i in (es[0].id, es[1].id))
    gone = await prune_until(max(scores.values()))
    assert gone == {es[0].id, es[1].id}
    assert await scope.count() == 0 and r.zscore(part.prune, scope.id) is None


async def test_prune_cost_is_driven_by_the_partition_prune_zset(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    r = clean_redis
    policy = ScopePolicy(decay_rate=RATE, decay_tick=TICK_S, evict_threshold=THRESHOLD)
    far = ScopePolicy(decay_rate=0.01, decay_tick=3600.0, evict_threshold=THRESHOLD)
    for i in range(30):  # many scopes, none due for hours
        s = bb.scope(f"agent:b{i}:stm")
        await s.set_policy(far)
        await s.write_many([f"x{j}" for j in range(20)])
    due = bb.scope("agent:a1:stm")
    await due.set_policy(policy)
    await due.write_many([f"y{j}" for j in range(5)])
    await asyncio.sleep(1.0)  # ~5 ticks: strength 1 * 0.5^5 < 0.1
    m = await _maint(bb)
    before = evalsha_calls(r)
    assert await _all(m, "prune", False) == 5
    # One prune script call for the one due scope: the 30 others are never visited.
    assert evalsha_calls(r) - before == 1
    assert await due.count() == 0
    assert sum([await bb.scope(f"agent:b{i}:stm").count() for i in range(30)]) == 600


async def test_capacity_after_tightening_evicts_the_weakest(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    r = clean_redis
    scope = bb.scope("team:t1")
    await scope.set_policy(ScopePolicy(decay_rate=0.1, decay_tick=3600.0))
    es = [await scope.write(f"e{i}", strength=0.2 + 0.07 * i) for i in range(10)]
    await scope.set_policy(ScopePolicy(decay_rate=0.1, decay_tick=3600.0, max_entries=4))
    m = await _maint(bb)
    snap = snapshot_of(r)
    assert await _all(m, "capacity", True) == 6
    assert snapshot_of(r) == snap
    assert await _all(m, "capacity", False) == 6
    assert set(await scope.ids()) == {e.id for e in es[-4:]}  # the four strongest
    assert await _all(m, "capacity", False) == 0


async def test_sweep_removes_exactly_the_expired(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    r = clean_redis
    scope = bb.scope("agent:a1:working")
    short = [await scope.write(f"s{i}", ttl=0.3) for i in range(3)]
    keep = [await scope.write(f"k{i}", ttl=60) for i in range(2)] + [await scope.write("forever")]
    await asyncio.sleep(0.5)
    m = await _maint(bb)
    snap = snapshot_of(r)
    assert await _all(m, "sweep", True) == 3
    assert snapshot_of(r) == snap
    assert await _all(m, "sweep", False) == 3
    assert set(await scope.ids()) == {e.id for e in keep}
    assert not {e.id for e in short} & set(await scope.ids())


def _unit(v: Sequence[float]) -> list[float]:
    a = np.asarray(v, dtype=float)
    return list(a / np.linalg.norm(a))


async def test_dedupe_threshold_guard_and_exact_merge_provenance(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    r = clean_redis
    # Controlled cosines: "alpha" vs "beta" 0.94 (< 0.95 threshold); "gamma" far from both.
    c = 0.94
    vecs = {
        "alpha": _unit([1.0, 0.0, 0.0]),
        "beta": _unit([c, np.sqrt(1 - c * c), 0.0]),
        "gamma": _unit([0.0, 0.0, 1.0]),
    }

    def similarity(texts: Sequence[str]) -> np.ndarray:
        return np.asarray([vecs[t.split()[0]] for t in texts])

    scope = bb.scope("agent:a1:ltm:semantic")
    a = await scope.write("alpha one", tags={"x"}, source=["s-a"])
    b = await scope.write("beta two", tags={"y"}, source=["s-b"])
    g1 = await scope.write("gamma dup", tags={"g1"}, source=["s-g1"])
    await scope.reinforce(g1.id, boost=0.0)
    g2 = await scope.write("gamma dup", tags={"g2"}, source=["s-g2"])
    await scope.reinforce(g2.id, boost=0.0)
    await scope.reinforce(g2.id, boost=0.0)
    m = await _maint(bb, similarity=similarity, dedupe_threshold=0.95)
    snap = snapshot_of(r)
    assert await _all(m, "dedupe", True) == 1
    assert snapshot_of(r) == snap
    assert await _all(m, "dedupe", False) == 1
    ids = set(await scope.ids())
    assert ids == {a.id, b.id, g1.id}  # alpha/beta (0.94) never merged
    kept = await scope.get(g1.id)
    assert kept.metadata["merged_from"] == [g2.id]
    assert set(kept.source) == {"s-g1", "s-g2", g2.id}
    assert set(kept.tags) >= {"g1", "g2"}
    # Its own reinforcement, plus the dropped one's two and one for the merge itself.
    assert kept.reinforcements == 1 + 2 + 1
    [st] = await bb.reads.stats([scope.id])  # the pool counts the merge as an eviction
    assert st.pool is not None and st.pool.removed["merged"] == 1 == st.pool.evicted_total
    # Lower the threshold below the cosine: now alpha/beta do merge (the guard is real).
    m2 = await _maint(bb, similarity=similarity, dedupe_threshold=0.93)
    assert await _all(m2, "dedupe", True) == 1


async def test_trim_only_behind_the_slowest_group(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    r = clean_redis
    await bb.ensure_groups(["summarize", "episodic"])
    scope = bb.scope("agent:a1:working")
    await scope.write_many([f"w{i}" for i in range(10)])
    await bb.relays.relay_all()
    bus = PartitionKeys(scope.partition).bus
    ids = [i.decode() for i, _ in r.xrange(bus)]
    assert len(ids) == 10
    fast = r.xreadgroup("summarize", "c1", {bus: ">"}, count=10)
    r.xack(bus, "summarize", *[i for i, _ in fast[0][1]])
    slow = r.xreadgroup("episodic", "c2", {bus: ">"}, count=6)
    r.xack(bus, "episodic", *[i for i, _ in slow[0][1]][:4])  # 2 delivered, still pending
    m = await _maint(bb)
    snap = snapshot_of(r)
    dry = await m.trim(scope.partition, dry_run=True)
    assert snapshot_of(r) == snap
    await m.trim(scope.partition)
    left = [i.decode() for i, _ in r.xrange(bus)]
    assert set(ids[4:]) <= set(left)  # the slowest group's pending and unread events stay
    assert len(ids) - len(left) == dry.total >= 1
    assert set(left) <= set(ids)


async def test_job_lease_runs_a_job_once_across_two_workers(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    scope = bb.scope("agent:a1:working")
    await scope.write_many([f"t{i}" for i in range(4)])
    await asyncio.gather(*(scope.write(f"x{i}", ttl=0.2) for i in range(3)))
    await asyncio.sleep(0.4)
    m1, m2 = await _maint(bb, "w1"), await _maint(bb, "w2")
    r1, r2 = await asyncio.gather(m1.run_job("sweep"), m2.run_job("sweep"))
    # Each partition's job ran exactly once, by one of the two.
    assert sorted([x.partition for x in r1] + [x.partition for x in r2]) == list(
        range(bb.partitions)
    )
    assert sum(x.total for x in r1 + r2) == 3
    # Within the interval, no partition's job moves to the other worker (the lease holder
    # keeps it: its own scheduler runs it once per interval).
    again1, again2 = await asyncio.gather(m2.run_job("sweep"), m1.run_job("sweep"))
    assert {x.partition for x in again1} == {x.partition for x in r2}
    assert {x.partition for x in again2} == {x.partition for x in r1}


async def test_dedupe_and_reindex_skip_scopes_unchanged_since_their_last_run(
    bb: Blackboard,
) -> None:
    """An idle worker does not read every entry of every scope each run (issue 23): a scope
    whose feed did not move since the job last went through it is skipped."""
    from blackboard import Entry, WriteRequest

    scope = bb.scope("agent:a1:working")
    await scope.write_many([WriteRequest(f"note {i}") for i in range(5)])
    given: list[int] = []

    async def reembed(entries: list[Entry]) -> int:
        given.append(len(entries))
        return 0  # stores nothing: the entries stay stale

    m = Maintenance(bb, "t", reembed=reembed, embedder_name="e")
    p = scope.partition
    assert (await m.reindex(p)).counts == {scope.id: 0} and given == [5]
    assert (await m.reindex(p)).counts == {} and given == [5]  # unchanged: not read
    assert (await m.reindex(p, dry_run=True)).counts == {scope.id: 5}  # a dry run looks
    await scope.write("one more")
    await m.reindex(p)
    assert given == [5, 6]  # changed: read again
    reads = 0
    real = scope.entries

    async def counting(*a: object, **k: object) -> list[Entry]:
        nonlocal reads
        reads += 1
        return await real(*a, **k)  # type: ignore[arg-type]

    m2 = Maintenance(bb, "t")
    m2.bb = _OneScope(bb, scope, counting)  # type: ignore[assignment]
    await m2.dedupe(p)
    await m2.dedupe(p)
    assert reads == 1


class _OneScope:
    """``bb`` whose ``scope()`` hands out one scope with a wrapped ``entries``."""

    def __init__(self, bb: Blackboard, scope: object, entries: object) -> None:
        self._bb, self._scope = bb, scope
        scope.entries = entries  # type: ignore[attr-defined]

    def scope(self, _id: str) -> object:
        return self._scope

    def __getattr__(self, name: str) -> object:
        return getattr(self._bb, name)


async def test_revalidate_ages_due_beliefs_once_and_changes_nothing_else(
    bb: Blackboard,
) -> None:
    """Issue 25: the revalidation job recomputes freshness and status of due live beliefs
    (stale past their kind's cadence, invalidated when contradiction outweighs support),
    leaves the others, and a second run changes nothing (idempotent)."""
    scope = bb.scope("agent:a1:ltm:semantic")
    now = bb.now_ms()
    day = 86_400_000

    def meta(**kw: object) -> dict[str, object]:
        return {"kind": "fact", "canonical_key": "fact:x:is", "status": "active",
                "belief_kind": "tooling_state", "last_supported_ms": now - 10 * day,
                "revalidation_due_ms": now - 1, "standing_weight": 1.0,
                "against_weight": 0.0, **kw}

    old = await scope.write({"statement": "x", "status": "active"}, tags={"fact"},
                            metadata=meta())
    beaten = await scope.write({"statement": "y", "status": "active"}, tags={"fact"},
                               metadata=meta(last_supported_ms=now, against_weight=2.0))
    later = await scope.write({"statement": "z"}, tags={"fact"},
                              metadata=meta(revalidation_due_ms=now + day))
    m = await _maint(bb)
    p = scope.partition
    assert (await m.revalidate(p, dry_run=True)).counts == {scope.id: 2}
    assert (await scope.get(old.id)).version == 1  # a dry run wrote nothing
    assert (await m.revalidate(p)).counts == {scope.id: 2}
    got = await scope.get(old.id)
    assert got.metadata["status"] == "stale" and got.value["status"] == "stale"
    assert got.metadata["freshness"] < 0.25  # 10 days of a 3-day cadence
    assert got.metadata["revalidation_due_ms"] > now
    assert (await scope.get(beaten.id)).metadata["status"] == "invalidated"
    assert (await scope.get(later.id)).version == 1  # not due
    assert (await m.revalidate(p)).counts == {}  # idempotent: nothing due any more
