"""Re-driving a dead letter: back on the bus for the group that failed on it only, once,
audited; every other group acks the re-driven event unhandled (no role handles an event
twice)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from blackboard import Blackboard, ConsumeCounters, InvalidArgument, NotFound


async def _one_batch(bb: Blackboard, role: str, partition: int,
                     counters: ConsumeCounters | None = None) -> list[str]:
    """Entry ids of the first batch ``role`` gets (acked), or [] after a short wait."""
    it = bb.consume(role, f"{role}-c", partitions=[partition], block_ms=100,
                    counters=counters)
    async with contextlib.aclosing(it):
        try:
            batch = await asyncio.wait_for(anext(it), 1.5)
        except TimeoutError:
            return []
        await batch.ack()
        return [ev.entry_id for ev in batch.events]


async def test_redrive_reaches_the_failed_group_only_once_and_is_audited(
        bb: Blackboard) -> None:
    s = bb.scope("agent:a1:working")
    p = s.partition
    bus = bb.bus(p)
    for role in ("a", "b"):
        await bus.ensure_group(role)
    e = await s.write({"text": "x"}, tags={"t"})
    await bb.relays.relay_all([p])
    # group a fails on the event (dead-lettered), group b handles it
    it = bb.consume("a", "a-c", partitions=[p], block_ms=100)
    async with contextlib.aclosing(it):
        batch = await anext(it)
        assert await bus.dead_letter("a", batch.events[0], 5, "handler failed") is True
        batch.release()
    assert await _one_batch(bb, "b", p) == [e.id]

    [d] = await bb.dead_letters.list(partition=p)
    assert (d.group, d.entry, d.scope, d.reason) == ("a", e.id, s.id, "handler failed")
    rec = await bb.dead_letters.redrive(p, d.id, by="ops")
    assert (rec.group, rec.entry, rec.by) == ("a", e.id, "ops")
    with pytest.raises(NotFound):  # once: the letter is gone
        await bb.dead_letters.redrive(p, d.id, by="ops")
    assert await bus.dlq_len() == 0

    counters = ConsumeCounters()
    assert await _one_batch(bb, "b", p, counters) == []  # b handled it the first time
    assert counters.not_ours == 1
    assert await bus.oldest_pending("b") is None  # acked, not left pending
    assert await _one_batch(bb, "a", p) == [e.id]  # a gets it again, with its tags
    [audited] = await bb.dead_letters.audit()
    assert (audited.dlq_id, audited.bus_id, audited.group) == (d.id, rec.bus_id, "a")


async def test_redrive_refuses_a_partition_out_of_range(bb: Blackboard) -> None:
    with pytest.raises(InvalidArgument):
        await bb.dead_letters.redrive(bb.partitions, "0-1", by="ops")
    with pytest.raises(NotFound):
        await bb.dead_letters.redrive(0, "0-1", by="ops")
