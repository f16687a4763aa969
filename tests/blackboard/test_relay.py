"""The inbox and the relay: what reaches the bus is built from the entry, once per content
version, whatever was pushed into the inbox; a mangled entry cannot wedge a partition."""

from __future__ import annotations

import asyncio
import json
import time

from blackboard import Blackboard, EventType
from blackboard.keys import PartitionKeys
from blackboard.relay import Inbox, RelayResult

SCOPE = "agent:a1:working"


async def _bus(bb: Blackboard, p: int) -> list[dict[bytes, bytes]]:
    return [f for _, f in await bb.client.xrange(PartitionKeys(p).bus)]


async def test_write_reaches_the_bus_through_the_inbox(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    e = await s.write({"text": "hi"}, tags={"a", "b"})
    pk = s.keys.part
    assert await bb.client.lrange(pk.inbox, 0, -1) == [f"{SCOPE}|{e.id}|1".encode()]
    assert await bb.client.exists(pk.bus) == 0  # scripts never touch the bus
    assert await bb.relays.relay_all() == {s.partition: RelayResult(1, 0, 0, 0)}
    (ev,) = await _bus(bb, s.partition)
    assert ev[b"type"] == b"written" and ev[b"entry"] == e.id.encode()
    assert ev[b"scope"] == SCOPE.encode() and ev[b"version"] == b"1"
    assert set(json.loads(ev[b"tags"])) == {"a", "b"}
    assert await bb.client.llen(pk.inbox) == 0
    h = await bb.client.hmget(s.keys.entry(e.id), "relayed", "relayed_id")
    assert h[0] == b"1" and h[1] is not None


async def test_forged_replayed_and_stale_items_are_dropped(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    e = await s.write("v1", tags={"real"})
    pk = s.keys.part
    await bb.relays.relay_all()
    other = next(f"agent:o{i}:working" for i in range(100)
                 if bb.scope(f"agent:o{i}:working").partition != s.partition)
    o = await bb.scope(other).write("not here")
    await bb.client.rpush(
        pk.inbox,
        f"{SCOPE}|{e.id}|1",  # replay of a relayed event
        f"{SCOPE}|{e.id}|7",  # a version the entry never had
        f"{SCOPE}|01NOSUCHENTRY0000000000000|1",  # no such entry
        f"{other}|{o.id}|1",  # a real entry of another partition
        "junk", "a|b", f"{SCOPE}|{e.id}|1|extra", "x" * 5000,
    )
    r = await Inbox(bb, s.partition).relay()
    assert (r.relayed, r.stale, r.invalid) == (0, 1, 7)
    assert len(await _bus(bb, s.partition)) == 1


async def test_an_early_forged_item_relays_the_entry_itself_once(bb: Blackboard) -> None:
    # Pushed before the real item: it relays the entry's real content (tags from the entry,
    # not from the item), and the real item is then dropped — one event, never two.
    s = bb.scope(SCOPE)
    e = await s.write("v1", tags={"real"})
    await bb.client.lpush(s.keys.part.inbox, f"{SCOPE}|{e.id}|1")
    r = await Inbox(bb, s.partition).relay()
    assert (r.relayed, r.stale, r.invalid) == (1, 1, 0)
    (ev,) = await _bus(bb, s.partition)
    assert ev[b"tags"] == b'["real"]'


async def test_updates_before_the_relay_collapse_to_the_newest_content(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    e = await s.write("v1")
    await s.update(e.id, value="v2")
    await s.reinforce(e.id)  # bumps the version without new content: not a bus event
    await s.update(e.id, value="v4")
    await bb.relays.relay_all()
    evs = await _bus(bb, s.partition)
    assert [(f[b"type"], f[b"version"]) for f in evs] == [(b"updated", b"4")]
    await s.update(e.id, value="v5")
    await bb.relays.relay_all()
    assert [f[b"version"] for f in await _bus(bb, s.partition)] == [b"4", b"5"]


async def test_a_mangled_entry_does_not_wedge_the_partition(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    bad = await s.write("mine")
    good = await s.write("fine")
    # An agent's raw commands on its own entry: wrong type, junk version fields.
    await bb.client.delete(s.keys.entry(bad.id))
    await bb.client.set(s.keys.entry(bad.id), "not a hash")
    third = await s.write("third")
    await bb.client.hset(s.keys.entry(third.id), "cver", "NaN")
    r = await Inbox(bb, s.partition).relay()
    assert (r.relayed, r.stale, r.invalid) == (1, 0, 2)
    (ev,) = await _bus(bb, s.partition)
    assert ev[b"entry"] == good.id.encode()


async def test_consumers_run_the_relay_and_it_blocks_when_idle(bb: Blackboard) -> None:
    s = bb.scope(SCOPE)
    got: list[float] = []

    async def consume() -> None:
        async for batch in bb.consume("r", "c", partitions=[s.partition], block_ms=5000):
            got.extend(time.perf_counter() for ev in batch.events if ev.type == EventType.WRITTEN)
            await batch.ack()
            if len(got) >= 3:
                return

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.3)  # the reader and its relay are blocked now
    sent = []
    for i in range(3):
        sent.append(time.perf_counter())
        await s.write(i)
        await asyncio.sleep(0.05)
    await asyncio.wait_for(task, 10)
    assert len(got) == 3
    # Each write is delivered while the relay is blocked, not at its next timeout (10 s).
    assert max(g - t for g, t in zip(got, sent, strict=True)) < 2.0
    assert await Inbox(bb, s.partition).pending() == 0
