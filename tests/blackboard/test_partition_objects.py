"""The substrate objects the workers drive Redis through: Bus, PendingBuffer, Upkeep,
Lease, LeaseTable, Presence, and the pipelined script runner's NOSCRIPT reload."""

from __future__ import annotations

import contextlib

from blackboard import Blackboard
from blackboard.pending import buffer_lengths
from blackboard.scripts import run_script_many


async def test_bus_groups_counts_and_dlq(bb: Blackboard) -> None:
    s = bb.scope("agent:a1:working")
    bus = bb.bus(s.partition)
    assert await bus.groups() == []  # no stream yet
    await bus.ensure_group("r")
    await bus.ensure_group("r")  # idempotent
    e = await s.write("x")
    c = await bus.counts()
    assert (c.length, c.dlq, c.scopes) == (0, 0, 1) and c.inbox == 1  # not relayed yet
    await bb.relays.relay_all([s.partition])
    c = await bus.counts()
    assert (c.length, c.inbox) == (1, 0)
    [g] = await bus.groups()
    assert (g.role, g.consumers, g.pending, g.lag) == ("r", 0, 0, 1)
    it = bb.consume("r", "w1", partitions=[s.partition], block_ms=100)
    async with contextlib.aclosing(it):
        batch = await anext(it)
        assert [ev.entry_id for ev in batch.events] == [e.id]
        assert await bus.oldest_pending("r") == batch.events[0].id
        assert await bus.dead_letter("r", batch.events[0], 2, "bad") is True
        assert await bus.dead_letter("r", batch.events[0], 2, "again") is False
        batch.release()
    assert await bus.oldest_pending("r") is None
    assert await bus.dlq_len() == 1
    [d] = await bb.dead_letters.list(partition=bus.partition)
    assert d.reason == "bad" and d.entry == e.id and d.deliveries == 2
    assert await bus.count_before("9999999999999-0") == 1
    assert await bus.trim_to("9999999999999-0") == 1 and (await bus.counts()).length == 0


async def test_pending_buffer_keys_and_reads(bb: Blackboard) -> None:
    buf = bb.pending(3)
    key = buf.key("e1", "agent:a1:stm")
    assert buf.parse(key) == ("e1", "agent:a1:stm")
    assert "{p3}" in key
    assert await buf.keys() == [] and await buf.backlog() == 0
    assert await buffer_lengths(bb, [(3, "e1", "agent:a1:stm")]) == [0]
    st = await buf.state(key)
    assert (st.size, st.head, st.inflight) == (0, None, False)
    assert await buf.drop_edge("e1") == (0, 0)


async def test_buffer_lengths_span_partitions(bb: Blackboard) -> None:
    """One round trip reads the buffers of several partitions, in the order asked."""
    a, b = bb.pending(3).key("e1", "agent:a1:stm"), bb.pending(5).key("e2", "team:t:stm")
    await bb.client.rpush(a, "x", "y")
    await bb.client.rpush(b, "z")
    got = await buffer_lengths(bb, [(5, "e2", "team:t:stm"), (3, "e1", "agent:a1:stm"),
                                    (3, "e2", "team:t:stm")])
    assert got == [1, 2, 0]
    assert await buffer_lengths(bb, []) == []


async def test_upkeep_scope_set_and_schedules(bb: Blackboard) -> None:
    s = bb.scope("agent:a1:working")
    await s.write("x")
    up = bb.upkeep(s.partition)
    assert await up.scope_ids() == [s.id]
    assert await up.prune_due(bb.now_ms()) == []
    assert await up.reschedule(s.id, dry_run=True) == 0
    assert await up.prune(s.id, "capacity", 500, True, "capacity") == (0, 0)
    assert await up.sweep(100, dry_run=True) == {}
    trimmed, reaped = await up.trim(dry_run=False)
    assert (trimmed, reaped) == (None, None)  # no group: the bus is kept whole


async def test_job_lease(bb: Blackboard) -> None:
    a, b = bb.job_lease("sweep"), bb.job_lease("sweep")
    assert await a.acquire("t1", 10_000) is True
    assert await b.acquire("t2", 10_000) is False
    assert await b.release("t2") is False
    assert await a.release("t1") is True
    assert await b.acquire("t2", 10_000) is True


async def test_lease_table(bb: Blackboard) -> None:
    t = bb.lease_table
    now = bb.now_ms()
    rows = await t.beat_and_read("proc1", now, [("summarize", "w1")])
    assert rows.processes == {("summarize", "w1"): "proc1"} and rows.beats == {"proc1": now}
    assert await t.acquire("summarize", 0, "w1", 10_000) is True
    assert await t.acquire("summarize", 0, "w2", 10_000) is False  # w1's process beats
    assert (await t.read()).holders == {("summarize", 0): "w1"}
    assert await t.release("summarize", 0, "w2", 10_000) is False
    assert await t.release("summarize", 0, "w1", 10_000) is True
    await t.forget([("summarize", "w1")], ["proc1"])
    assert await t.read() == type(rows)()


async def test_presence(bb: Blackboard) -> None:
    p = bb.presence
    now = bb.now_ms()
    await p.beat("w1", "index", {"id": "w1", "role": "index", "beat_at": now}, now, 60_000,
                 first=True)
    await p.beat("w2", "index", {"beat_at": now}, now, 60_000)  # a bare beat: not listed
    assert [r["id"] for r in await p.records()] == ["w1"]
    assert await p.live("index", now - 1) == 2
    assert await p.live("index", now) == 0  # both beat at ``now``: pruned as stale
    await p.remove("w1", "index")
    assert await p.records() == []


async def test_run_script_many_reloads_after_script_flush(bb: Blackboard) -> None:
    s = bb.scope("agent:a1:working")
    await bb.client.script_flush()
    [e] = await s.write_many(["after a flush"])  # run_script_many: NOSCRIPT, load, again
    assert (await s.get(e.id)).value == "after a flush"
    # lease.lua runs only on lease keys (it may run over maxmemory)
    replies = await run_script_many(bb.client, "lease",
                                    [(["bb:lease:test:l"], ["release", "x", "1"])])
    assert replies == [0]
