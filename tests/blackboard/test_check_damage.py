"""Raw commands on a scope's own keys (all a confined agent can do to them) never make a
script write half of its work, and ``blackboard check`` finds and mends what they did."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from blackboard import Blackboard, ScopeDamaged, ScopePolicy

SCOPE = "agent:a1:working"
MAX_ID = "18446744073709551615-18446744073709551615"


async def _damage(bb: Blackboard, how: str, victim: str) -> None:
    s, c = bb.scope(SCOPE), bb.client
    k = s.keys
    if how == "ix":
        await c.delete(k.ix)
        await c.set(k.ix, "x")
    elif how == "tag_set":
        await c.delete(k.tag_set("t"))
        await c.rpush(k.tag_set("t"), "x")
    elif how == "tags":
        await c.delete(k.tags)
        await c.sadd(k.tags, "x")
    elif how == "feed":
        await c.delete(k.feed)
        await c.hset(k.feed, "x", "y")
    elif how == "feed_room":
        await c.xadd(k.feed, {"x": "y"}, id=MAX_ID)
    elif how == "victim":
        await c.delete(k.entry(victim))
        await c.set(k.entry(victim), "x")
        await c.zadd(k.ix, {victim: 0})  # still indexed: capacity eviction picks it


CALLS: dict[str, Callable[[Any, str], Awaitable[Any]]] = {
    "write": lambda s, _id: s.write({"text": "new"}, tags={"t"}),
    "upsert": lambda s, _id: s.write({"text": "new"}, tags={"t"}, key="k"),
    "update": lambda s, eid: s.update(eid, value="changed", tags={"t", "u"}),
    "delete": lambda s, eid: s.delete(eid),
    "reinforce": lambda s, eid: s.reinforce(eid),
}


@pytest.mark.parametrize("how", ["ix", "tag_set", "tags", "feed", "feed_room", "victim"])
@pytest.mark.parametrize("call", sorted(CALLS))
async def test_a_damaged_scope_refuses_whole(
    bb: Blackboard, snapshot: Callable[[], Any], how: str, call: str
) -> None:
    s = bb.scope(SCOPE)
    await s.set_policy(ScopePolicy(max_entries=3))
    es = [await s.write({"i": i}, tags={"t"}, key="k" if i == 0 else None) for i in range(3)]
    await _damage(bb, how, es[0].id)
    before = snapshot()
    try:
        await CALLS[call](s, es[1].id)
    except ScopeDamaged as exc:
        assert "blackboard check --repair" in str(exc)
    else:
        # Only a call that never touches the damaged key may go through.
        assert (how, call) in {("victim", "update"), ("victim", "delete"),
                               ("victim", "reinforce"), ("tag_set", "reinforce"),
                               ("tags", "reinforce"), ("victim", "upsert"),
                               ("ix", "reinforce")}, f"{call} went through a damaged {how}"
        return
    assert snapshot() == before, "a refused call wrote something"


@pytest.mark.parametrize("how", ["ix", "tag_set", "tags", "feed", "feed_room"])
async def test_check_finds_and_repairs_the_damage(bb: Blackboard, how: str) -> None:
    s = bb.scope(SCOPE)
    es = [await s.write({"i": i}, tags={"t"}) for i in range(3)]
    await _damage(bb, how, es[0].id)
    with pytest.raises(ScopeDamaged):
        await s.write("refused", tags={"t"})
    found = await bb.check()
    assert not found.ok and {d.index for d in found.drift} & {"type", "feed"}
    await bb.check(repair=True)
    assert (await bb.check()).ok
    await s.write("accepted again", tags={"t"})
    assert await s.count() == 4


async def test_check_publishes_an_entry_without_its_event(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    e = await s.write("orphan", tags={"t"})
    await bb.relays.relay_all()
    # What a half-written script left before: the entry and its indexes, no event.
    await bb.client.hdel(s.keys.entry(e.id), "event_id", "last_event_id", "cver", "relayed")
    await bb.client.xtrim(s.keys.part.bus, maxlen=0)
    found = await bb.check()
    assert [(d.index, d.member) for d in found.drift] == [("event", e.id)] and not found.ok
    await bb.check(repair=True)
    assert (await bb.check()).ok
    assert (await s.get(e.id)).event_id  # the feed has its event again ...
    await bb.relays.relay_all()  # ... and the dataflow gets it
    bus = await bb.client.xrange(s.keys.part.bus)
    assert [f[b"entry"] for _, f in bus] == [e.id.encode()]
