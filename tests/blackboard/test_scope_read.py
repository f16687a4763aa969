"""Scope reads: get/get_many/get_by_key, entries filters, count, tags, feed, events, reinforce."""

from __future__ import annotations

import asyncio
import itertools
import math

import pytest

from blackboard import Blackboard, Entry, EventType, InvalidArgument, NotFound, ScopePolicy
from blackboard import decay as D
from blackboard.ids import new_ulid

SCOPE = "agent:a1:working"
TAGS = ["a", "b", "c"]


async def test_get_many_and_get_by_key(board: Blackboard) -> None:
    s = board.scope(SCOPE)
    a = await s.write("a", key="ka")
    b = await s.write("b", ttl=0.05)
    missing = new_ulid()
    await asyncio.sleep(0.1)
    got = await s.get_many([b.id, a.id, missing, a.id])
    assert [g.id if g else None for g in got] == [None, a.id, None, a.id]
    assert await s.get_many([]) == []
    assert (await s.get_by_key("ka")).id == a.id
    with pytest.raises(NotFound):
        await s.get_by_key("nope")
    with pytest.raises(NotFound):
        await s.get(missing)
    with pytest.raises(InvalidArgument):
        await s.get("not an id!")


async def _populate(board: Blackboard) -> list[Entry]:
    """Entries over every subset of {a, b, c}, twice, spread over a few milliseconds."""
    s = board.scope(SCOPE)
    out = []
    subsets = [set(c) for n in range(4) for c in itertools.combinations(TAGS, n)]
    for i, tags in enumerate(subsets * 2):
        out.append(await s.write({"i": i}, tags=tags))
        if i % 4 == 3:
            await asyncio.sleep(0.002)  # several distinct created_at values for time ranges
    return out


def _expected(
    entries: list[Entry],
    all_of: set[str],
    any_of: set[str],
    none_of: set[str],
    lo: int | None,
    hi: int | None,
    limit: int | None,
    newest_first: bool,
) -> list[str]:
    hits = [
        e
        for e in entries
        if all_of <= e.tags
        and (not any_of or e.tags & any_of)
        and not e.tags & none_of
        and (lo is None or e.created_at >= lo)
        and (hi is None or e.created_at <= hi)
    ]
    hits.sort(key=lambda e: (e.created_at, e.id), reverse=newest_first)
    return [e.id for e in hits][:limit]


async def test_entries_every_filter_combination(board: Blackboard) -> None:
    s = board.scope(SCOPE)
    entries = await _populate(board)
    times = sorted({e.created_at for e in entries})
    assert len(times) >= 3
    mid_lo, mid_hi = times[1], times[-2]
    filters = [set(), {"a"}, {"a", "b"}]
    cases = 0
    for all_of, any_of, none_of in itertools.product(filters, [set(), {"b", "c"}], [set(), {"c"}]):
        for lo, hi in [(None, None), (mid_lo, mid_hi), (mid_lo, None)]:
            for limit in (None, 3, 100):
                for newest in (True, False):
                    got = await s.entries(
                        all_of=all_of,
                        any_of=any_of,
                        none_of=none_of,
                        start_ms=lo,
                        end_ms=hi,
                        limit=limit,
                        newest_first=newest,
                    )
                    want = _expected(entries, all_of, any_of, none_of, lo, hi, limit, newest)
                    assert [e.id for e in got] == want, (all_of, any_of, none_of, lo, hi, limit)
                    cases += 1
    assert cases == 3 * 2 * 2 * 3 * 3 * 2
    # Contradictory filter, zero limit.
    assert await s.entries(all_of={"a"}, none_of={"a"}) == []
    assert await s.entries(limit=0) == []
    with pytest.raises(InvalidArgument):
        await s.entries(limit=-1)


async def test_entries_paging_beyond_one_page(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    written = await s.write_many(list(range(1200)))
    everything = await s.entries(limit=None, newest_first=False)
    assert [e.id for e in everything] == [e.id for e in written]
    # none_of drops items within pages, so the walk must go on until limit is reached.
    tagged = await s.write_many([{"x": i} for i in range(5)])
    for e in tagged:
        await s.update(e.id, tags={"skip"})
    got = await s.entries(none_of={"skip"}, limit=7)
    assert [e.id for e in got] == [e.id for e in written[::-1][:7]]


async def test_expired_entries_hidden_from_reads(board: Blackboard) -> None:
    s = board.scope(SCOPE)
    live = await s.write("live", tags={"t"})
    gone = await s.write("gone", tags={"t", "u"}, key="k", ttl=0.05)
    assert await s.count() == 2 and await s.tags() == {"t": 2, "u": 1}
    await asyncio.sleep(0.1)
    # Not swept yet: every read must hide it at once.
    assert await s.count() == 1
    assert await s.tags() == {"t": 1}
    assert [e.id for e in await s.entries()] == [live.id]
    assert [e.id for e in await s.entries(all_of={"t"})] == [live.id]
    assert await s.entries(any_of={"u"}) == []
    with pytest.raises(NotFound):
        await s.get(gone.id)
    with pytest.raises(NotFound):
        await s.get_by_key("k")
    assert await board.client.exists(s.keys.entry(gone.id))  # still there, unswept


async def test_count_and_tags_follow_the_counter_hash(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    assert await s.count() == 0 and await s.tags() == {}
    await s.write_many([{"i": i} for i in range(5)])
    e = await s.write("x", tags={"only"})
    assert await s.count() == 6 and await s.tags() == {"only": 1}
    # tags() reads the counter hash, not the sets: a forged counter shows through.
    await bb.client.hset(s.keys.tags, "forged", 4)
    assert (await s.tags())["forged"] == 4
    await bb.client.hdel(s.keys.tags, "forged")
    await s.delete(e.id)
    assert await s.count() == 5 and await s.tags() == {}


async def test_feed_from_now_from_zero_and_from_an_id(board: Blackboard) -> None:
    s = board.scope(SCOPE)
    await s.set_policy(ScopePolicy(max_entries=3))
    a = await s.write("a", tags={"x"})

    it = s.feed(block_ms=100)
    nxt = asyncio.ensure_future(it.__anext__())
    await asyncio.sleep(0.3)  # the reader is now blocked after `a`
    assert not nxt.done()
    b = await s.write("b", tags={"y"})
    ev = await asyncio.wait_for(nxt, 5)
    assert (ev.type, ev.entry_id, ev.version, ev.tags) == (EventType.WRITTEN, b.id, 1, {"y"})
    await it.aclose()

    await s.update(a.id, value="a2", tags={"x", "z"})
    await s.reinforce(a.id)
    c = await s.write("c")
    d = await s.write("d")  # full: evicts the weakest (all equal: the oldest, a)
    await s.delete(b.id)
    e = await s.write("e", ttl=0.01)
    await asyncio.sleep(0.05)
    await board.sweep()
    want = [
        (EventType.WRITTEN, a.id, 1, {"x"}),
        (EventType.WRITTEN, b.id, 1, {"y"}),
        (EventType.UPDATED, a.id, 2, {"x", "z"}),
        (EventType.REINFORCED, a.id, 3, {"x", "z"}),
        (EventType.WRITTEN, c.id, 1, set()),
        (EventType.EVICTED, a.id, 3, {"x", "z"}),
        (EventType.WRITTEN, d.id, 1, set()),
        (EventType.DELETED, b.id, 1, {"y"}),
        (EventType.WRITTEN, e.id, 1, set()),
        (EventType.EXPIRED, e.id, 1, set()),
    ]
    got = []
    async for ev in s.feed("0", block_ms=50):
        got.append(ev)
        if len(got) == len(want):
            break
    assert [(g.type, g.entry_id, g.version, set(g.tags)) for g in got] == want
    assert all(g.scope == SCOPE and g.partition == s.partition and g.at > 0 for g in got)
    # events() returns the same, and feed(<id>) resumes strictly after that id.
    assert [g.id for g in await s.events()] == [g.id for g in got]
    after = []
    async for ev in s.feed(got[6].id, block_ms=50):
        after.append(ev.id)
        if len(after) == 3:
            break
    assert after == [g.id for g in got[7:]]
    assert [g.id for g in await s.events(got[2].id, got[4].id)] == [g.id for g in got[2:5]]
    assert len(await s.events(count=2)) == 2
    assert await s.last_event_id() == got[-1].id


async def test_feed_is_capped_by_policy(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    await s.set_policy(ScopePolicy(feed_maxlen=10))
    await s.write_many(list(range(2000)))
    # MAXLEN ~ trims whole radix nodes: the feed stays far below 2000, the bus is untrimmed.
    assert await bb.client.xlen(s.keys.feed) < 500
    await bb.relays.relay_all()
    assert await bb.client.xlen(s.keys.part.bus) == 2000


async def test_reinforce_follows_decay_module(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    rate, tick_ms, thr = 0.5, 1000, 0.1
    await s.set_policy(ScopePolicy(decay_rate=rate, decay_tick=tick_ms / 1000, evict_threshold=thr))
    e = await s.write("v", strength=0.8)
    ev0 = await bb.client.zscore(s.keys.evict, e.id)
    assert ev0 == pytest.approx(D.evict_time(0.8, e.created_at, thr, rate, 0, tick_ms), abs=1)
    assert await bb.client.zscore(s.keys.part.prune, SCOPE) == ev0
    await asyncio.sleep(0.3)

    strength, k = await s.reinforce(e.id, by="a2", boost=0.1)
    after = await s.get(e.id)
    expect = D.strength_at(0.8, e.created_at, after.strength_at, rate, 0, tick_ms) + 0.1
    assert after.strength_at - e.created_at >= 300
    assert strength == pytest.approx(expect, rel=1e-12)
    assert expect < 0.8  # it did decay before the boost
    assert k == 1 and after.reinforcements == 1 and after.reinforced_by == ("a2",)
    assert after.version == 2
    ev1 = await bb.client.zscore(s.keys.evict, e.id)
    assert ev1 == pytest.approx(
        D.evict_time(after.strength, after.strength_at, thr, rate, 1, tick_ms), abs=1
    )

    # A second reinforcement decays at the slower rate of one reinforcement and is capped.
    await asyncio.sleep(0.2)
    s2, k2 = await s.reinforce(e.id, by="a2", boost=0.9, max_strength=0.95)
    assert (s2, k2) == (0.95, 2)
    again = await s.get(e.id)
    assert again.reinforced_by == ("a2",)  # the same agent is recorded once
    assert D.retention(rate, 1) > D.retention(rate, 0)
    assert math.isfinite(ev1)
    evs = await s.events()
    assert [(x.type, x.version) for x in evs] == [
        (EventType.WRITTEN, 1),
        (EventType.REINFORCED, 2),
        (EventType.REINFORCED, 3),
    ]
    with pytest.raises(NotFound):
        await s.reinforce(new_ulid())


async def test_reinforce_without_decay_keeps_weakest_first_order(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    e = await s.write("v", strength=0.3)
    strength, _ = await s.reinforce(e.id, boost=0.2)
    assert strength == pytest.approx(0.5)
    # Non-decaying scopes score the evict zset by strength (capacity takes the weakest).
    assert await bb.client.zscore(s.keys.evict, e.id) == pytest.approx(0.5)
