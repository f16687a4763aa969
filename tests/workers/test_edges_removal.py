"""Removing an edge under a running worker: its buffered items and its batch in flight are
dropped in the same step, their holds released, and nothing is buffered for it again."""

from __future__ import annotations

import asyncio

import redis
from edges_support import NO_BACKSTOP, pending_ids, scope_entries, until, wait_ready
from workers_support import WorkerProcs

from blackboard import Blackboard, Entry
from blackboard.keys import PartitionKeys, partition_of
from memory.registry import Registry
from memory.subscriptions import MemorySubscription, Trigger

SRC, TGT = "agent:a1:working", "agent:a1:stm"
#: The worker pauses this long between writing a batch's outputs and trimming it, so the
#: removal lands while the batch is in flight.
WINDOW_MS = 4000


def holds(r: redis.Redis, bb: Blackboard, entries: list[Entry]) -> list[int]:
    keys = bb.scope(SRC).keys
    return [int(r.hget(keys.entry(e.id), "holds") or 0) for e in entries]


def leftovers(r: redis.Redis, partitions: int, edge_id: str) -> list[str]:
    """Every trace of the edge's buffers: keys, pendings members, inflight fields."""
    out = [k.decode() for k in r.scan_iter(match=f"bb:*:pending:{edge_id}:*")]
    for p in range(partitions):
        part = PartitionKeys(p)
        out += [f"pendings {m.decode()}" for m in r.smembers(part.pendings)
                if f":pending:{edge_id}:" in m.decode()]
        out += [f"inflight {f.decode()}" for f in r.hkeys(part.inflight)
                if f":pending:{edge_id}:" in f.decode()]
    return out


async def test_remove_edge_drops_buffer_and_batch_in_flight(
    bb: Blackboard, clean_redis: redis.Redis, worker_procs: WorkerProcs
) -> None:
    reg = Registry(bb)
    try:
        e = await reg.install_edge(MemorySubscription(
            "agent:*:working", "agent:{1}:stm", "identity", params={"max_batch": 5},
            trigger=Trigger.count(5)))
        other = await reg.install_edge(MemorySubscription(
            "agent:*:working", "agent:{1}:stm", "summarize", trigger=Trigger.count(1000)))
        w = worker_procs.start("summarize", BLACKBOARD_WORKER_CRASH_WINDOW_MS=str(WINDOW_MS),
                               **NO_BACKSTOP)
        await wait_ready(bb, clean_redis, ("summarize",))
        written = [await bb.scope(SRC).write(f"step {i}") for i in range(8)]
        part = PartitionKeys(partition_of(SRC, bb.partitions))
        key = part.pending(e.id, TGT)

        async def in_flight() -> bool:
            # The first 5 fired (outputs written, the worker now in its crash window); the
            # last 3 wait behind them in the buffer.
            return (bool(clean_redis.hexists(part.inflight, key))
                    and clean_redis.llen(key) == 8
                    and len(await scope_entries(bb, TGT)) == 5)

        await until(in_flight, 30, "a batch of 5 in flight and 3 items behind it", w)
        assert holds(clean_redis, bb, written) == [2] * 8  # both edges hold every entry

        assert await reg.remove_edge(e.id) is True
        assert leftovers(clean_redis, bb.partitions, e.id) == []
        assert holds(clean_redis, bb, written) == [1] * 8  # the other edge's hold stays
        assert len(pending_ids(clean_redis, bb.partitions, other, SRC, TGT)) == 8

        # The worker's trim of its batch in hand finds nothing to trim; later writes are
        # not buffered for the removed edge, only for the one that remains.
        await asyncio.sleep(WINDOW_MS / 1000 + 0.5)
        more = [await bb.scope(SRC).write(f"step {i}") for i in range(8, 11)]

        async def buffered_for_other() -> bool:
            return len(pending_ids(clean_redis, bb.partitions, other, SRC, TGT)) == 11

        await until(buffered_for_other, 15, "the later writes buffered for the other edge", w)
        assert leftovers(clean_redis, bb.partitions, e.id) == []
        assert holds(clean_redis, bb, written + more) == [1] * 11
        assert len(await scope_entries(bb, TGT)) == 5  # nothing fired for the removed edge
        assert w.poll() is None
    finally:
        await reg.aclose()
