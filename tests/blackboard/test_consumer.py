"""Consumer groups on the partition buses: delivery, ack, re-delivery, DLQ, claim, trim."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from blackboard import Batch, Blackboard, ConsumeOptions, Event, EventType, InvalidArgument
from blackboard.keys import PartitionKeys


def scopes_in_distinct_partitions(bb: Blackboard, n: int) -> list[str]:
    out: dict[int, str] = {}
    i = 0
    while len(out) < n:
        sid = f"agent:c{i}:working"
        out.setdefault(bb.scope(sid).partition, sid)
        i += 1
    return list(out.values())


async def next_batch(it: AsyncIterator[Batch], wait_s: float = 5.0) -> Batch:
    return await asyncio.wait_for(it.__anext__(), wait_s)


async def drain(it: AsyncIterator[Batch], n: int, wait_s: float = 10.0) -> list[Event]:
    """Read and ack until ``n`` events arrived."""
    got: list[Event] = []
    while len(got) < n:
        b = await next_batch(it, wait_s)
        got += b.events
        await b.ack()
    return got


async def test_consume_all_partitions_and_ack(board: Blackboard) -> None:
    sids = scopes_in_distinct_partitions(board, 4)
    written = {}
    for sid in sids:
        for e in await board.scope(sid).write_many([1, 2, 3]):
            written[e.id] = sid
    async with contextlib.aclosing(board.consume("index", "w1", block_ms=100)) as it:
        got = await drain(it, 12)
    assert {e.entry_id: e.scope for e in got} == written
    assert all(e.type == EventType.WRITTEN and e.version == 1 for e in got)
    assert all(e.partition == board.scope(e.scope).partition for e in got)
    # Events of one scope arrive in write order.
    for sid in sids:
        assert [e.entry_id for e in got if e.scope == sid] == [
            k for k, v in written.items() if v == sid
        ]
    for p in {board.scope(s).partition for s in sids}:
        assert (await board.client.xpending(PartitionKeys(p).bus, "index"))["pending"] == 0


async def test_unacked_batch_is_redelivered(bb: Blackboard) -> None:
    s = bb.scope("agent:a1:working")
    es = await s.write_many(["a", "b"])
    async with contextlib.aclosing(bb.consume("r", "w1", block_ms=100)) as it:
        first = await next_batch(it)
        assert [e.entry_id for e in first.events] == [e.id for e in es]
        # Not acked: moving on releases it, and the same events come again.
        second = await next_batch(it)
        assert [e.id for e in second.events] == [e.id for e in first.events]
        # Partial ack: only the rest is re-delivered.
        await second.ack(second.events[:1])
        second.release()
        third = await next_batch(it)
        assert [e.id for e in third.events] == [second.events[1].id]
        await third.ack()
    pend = await bb.client.xpending(s.keys.part.bus, "r")
    assert pend["pending"] == 0


async def test_max_deliveries_moves_to_dlq_and_acks(bb: Blackboard) -> None:
    s = bb.scope("agent:a1:working")
    bad, good = await s.write_many(["poison", "fine"])
    seen = 0
    async with contextlib.aclosing(bb.consume("r", "w1", block_ms=100, max_deliveries=3)) as it:
        for _ in range(3):
            b = await next_batch(it)
            assert bad.id in [e.entry_id for e in b.events]
            seen += 1
            await b.ack([e for e in b.events if e.entry_id == good.id])
            b.release()  # the poison event fails every time
        # No fourth delivery: it went to the DLQ instead.
        with pytest.raises(TimeoutError):
            await next_batch(it, 0.7)
    assert seen == 3  # delivered exactly max_deliveries times
    dlq = await bb.dead_letters.list(partition=s.partition)
    assert len(dlq) == 1
    d = dlq[0]
    assert d.entry == bad.id and d.group == "r" and d.deliveries == 3
    assert d.reason == "max deliveries exceeded" and d.scope == s.id
    assert (await bb.client.xpending(s.keys.part.bus, "r"))["pending"] == 0


async def test_dead_letter_explicitly(bb: Blackboard) -> None:
    s = bb.scope("agent:a1:working")
    await s.write("x")
    async with contextlib.aclosing(bb.consume("r", "w1", block_ms=100)) as it:
        b = await next_batch(it)
        assert await b.dead_letter(b.events[0], "bad input") is True
        assert await b.dead_letter(b.events[0], "twice") is False  # no longer pending
        b.release()
    assert [d.reason for d in await bb.dead_letters.list(partition=s.partition)] == ["bad input"]
    assert (await bb.client.xpending(s.keys.part.bus, "r"))["pending"] == 0


async def test_claim_dead_consumers_pending(bb: Blackboard) -> None:
    s = bb.scope("agent:a1:working")
    es = await s.write_many(["a", "b", "c"])
    async with contextlib.aclosing(bb.consume("r", "dead", block_ms=100)) as it:
        b = await next_batch(it)
        assert len(b) == 3
    # "dead" never acks. A live consumer does not take its events before claim_idle_ms...
    opts = ConsumeOptions(block_ms=100, claim_idle_ms=1000, claim_every_ms=100)
    async with contextlib.aclosing(bb.consume("r", "live", options=opts)) as it:
        early = asyncio.ensure_future(next_batch(it, 10))
        await asyncio.sleep(0.3)
        assert not early.done()
        # ...but after it: claimed, delivered to the live consumer, acked.
        b2 = await early
        assert [e.entry_id for e in b2.events] == [e.id for e in es]
        await b2.ack()
    summary = await bb.client.xpending(s.keys.part.bus, "r")
    assert summary["pending"] == 0


async def test_partitions_callable_is_rebalanced(bb: Blackboard) -> None:
    a, b = (bb.scope(x) for x in scopes_in_distinct_partitions(bb, 2))
    owned = {a.partition}
    opts = ConsumeOptions(block_ms=50, rebalance_every_ms=100)
    ea = await a.write("in a")
    eb = await b.write("in b")
    async with contextlib.aclosing(
        bb.consume("r", "w", partitions=lambda: owned, options=opts)
    ) as it:
        got = await drain(it, 1)
        assert [e.entry_id for e in got] == [ea.id]
        nothing = asyncio.ensure_future(next_batch(it, 10))
        await asyncio.sleep(0.4)
        assert not nothing.done()  # b's partition is not ours
        owned.clear()
        owned.add(b.partition)
        batch = await nothing
        assert [e.entry_id for e in batch.events] == [eb.id]
        await batch.ack()
        ea2 = await a.write("in a again")  # a's partition was given up: not delivered
        eb2 = await b.write("in b again")
        got = await drain(it, 1)
        assert [e.entry_id for e in got] == [eb2.id]
    assert (await bb.client.xpending(a.keys.part.bus, "r"))["pending"] == 0
    assert ea2.id  # left for a's next owner
    # A fixed collection is honoured as well (out-of-range partitions ignored).
    async with contextlib.aclosing(
        bb.consume("r", "w", partitions=[a.partition, 999], options=opts)
    ) as it:
        got = await drain(it, 1)
        assert [e.entry_id for e in got] == [ea2.id]


async def test_ensure_groups_and_events_before_the_group(bb: Blackboard) -> None:
    s = bb.scope("agent:a1:working")
    e = await s.write("before any group")
    await bb.ensure_groups(["summarize", "index"])
    await bb.ensure_groups(["summarize"])  # idempotent
    for p in range(bb.partitions):
        names = {g["name"] for g in await bb.client.xinfo_groups(PartitionKeys(p).bus)}
        assert names == {b"summarize", b"index"}
    async with contextlib.aclosing(bb.consume("summarize", "w", block_ms=100)) as it:
        got = await drain(it, 1)  # groups start at id 0: earlier events are delivered
    assert [x.entry_id for x in got] == [e.id]


async def test_trim_behind_slowest_group_only(bb: Blackboard) -> None:
    s = bb.scope("agent:a1:working")
    other = next(
        bb.scope(x)
        for x in scopes_in_distinct_partitions(bb, 2)
        if bb.scope(x).partition != s.partition
    )
    await other.write_many(list(range(5)))  # a bus without groups
    await s.write_many(list(range(10)))
    await bb.relays.relay_all()
    bus = s.keys.part.bus
    await bb.bus(s.partition).ensure_group("fast")
    await bb.bus(s.partition).ensure_group("slow")
    await bb.bus(other.partition).ensure_group("idle")  # a group that has read nothing
    c = bb.client
    ids = [sid for sid, _ in await c.xrange(bus)]
    await c.xreadgroup("fast", "f", {bus: ">"})
    await c.xack(bus, "fast", *ids)
    await c.xreadgroup("slow", "s", {bus: ">"}, count=4)
    await c.xack(bus, "slow", ids[0], ids[1])  # slow: 2 acked, 2 pending, 6 unread

    dry = await bb.trim(dry_run=True)
    assert dry.trimmed == {s.partition: 2} and dry.dry_run
    assert await c.xlen(bus) == 10
    rep = await bb.trim()
    assert rep.trimmed == {s.partition: 2} and rep.total == 2
    assert [sid for sid, _ in await c.xrange(bus)] == ids[2:]
    assert await c.xlen(other.keys.part.bus) == 5
    # The slow group still reads everything it has not acked.
    pend = await c.xpending_range(bus, "slow", "-", "+", 10)
    assert [r["message_id"] for r in pend] == ids[2:4]
    await c.xack(bus, "slow", *ids[2:4])
    rest = await c.xreadgroup("slow", "s", {bus: ">"})
    assert [sid for sid, _ in rest[0][1]] == ids[4:]
    await c.xack(bus, "slow", *ids[4:])
    assert (await bb.trim()).trimmed[s.partition] == 7  # all but the last delivered one


async def test_consume_rejects_bad_names(bb: Blackboard) -> None:
    with pytest.raises(InvalidArgument):
        bb.consume("has space", "w")
    with pytest.raises(InvalidArgument):
        bb.consume("r", "")


async def test_takeovers_after_crashes_are_not_failures(bb: Blackboard) -> None:
    # Consumers that die holding an event (here: abandon their batch) hand it over; that
    # is no failure of the event, and must not dead-letter it after max_deliveries — the
    # crash test lost up to 401 healthy index events that way. Only the guard, far above,
    # stops a poison event that kills every consumer.
    s = bb.scope("agent:a1:working")
    e = await s.write("healthy")
    opts = {"block_ms": 50, "max_deliveries": 2, "claim_idle_ms": 1}
    for n in range(5):  # five "crashes", more than max_deliveries
        async with contextlib.aclosing(bb.consume("r", f"dies{n}", **opts)) as it:
            b = await next_batch(it)
            assert [x.entry_id for x in b.events] == [e.id]
        await asyncio.sleep(0.01)
    async with contextlib.aclosing(bb.consume("r", "lives", **opts)) as it:
        b = await next_batch(it)
        await b.ack()
    assert await bb.dead_letters.list(partition=s.partition) == []
    # The guard: 4 x max_deliveries deliveries with no handler failure.
    poison = await s.write("kills its consumer")
    for n in range(8):
        async with contextlib.aclosing(bb.consume("r", f"again{n}", **opts)) as it:
            b = await next_batch(it)
            assert [x.entry_id for x in b.events] == [poison.id]
        await asyncio.sleep(0.01)
    async with contextlib.aclosing(bb.consume("r", "last", **opts)) as it:
        with pytest.raises(TimeoutError):
            await next_batch(it, 0.7)
    (d,) = await bb.dead_letters.list(partition=s.partition)
    assert d.entry == poison.id
    assert d.reason == "max deliveries exceeded: its consumers died holding it"
