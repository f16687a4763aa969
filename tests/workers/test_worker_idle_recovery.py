"""A worker that does not trip over itself: every consume loop (the dataflow's and the
index role's) reopens after Redis drops its connections; bus trimming survives a group
whose pending events are acked between its two reads."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from workers_support import FAST, stop_worker

from blackboard import Blackboard, WriteRequest
from blackboard.keys import PartitionKeys
from memory.registry import Registry
from memory.subscriptions import MemorySubscription, Trigger

pytestmark = pytest.mark.process  # worker processes


async def _until(pred: Any, limit_s: float, what: str) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if await pred():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out after {limit_s}s waiting for {what}")


def _group(r: redis.Redis, bus: str, name: str) -> dict[str, Any]:
    for g in r.xinfo_groups(bus):
        if g["name"].decode() == name:
            return dict(g)
    raise AssertionError(f"no group {name} on {bus}")


async def test_consume_loops_reopen_after_redis_drops_their_connections(
    bb: Blackboard, clean_redis: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    r = clean_redis
    reg = Registry(bb)
    await reg.save_edge(MemorySubscription("agent:*:working", "agent:{1}:stm", "summarize",
                                           trigger=Trigger.count(5)))
    await reg.aclose()
    log = tmp_path / "worker.log"
    with open(log, "wb") as f:  # noqa: ASYNC230
        p = subprocess.Popen(  # noqa: ASYNC220
            [sys.executable, "-m", "cli", "worker", "--role", "all",
             "--redis-url", redis_url],
            env={**os.environ, **FAST, "PYTHONUNBUFFERED": "1"},
            stdout=f, stderr=subprocess.STDOUT,
        )
    scope = bb.scope("agent:a1:working")
    stm = bb.scope("agent:a1:stm")

    async def consolidated(n: int) -> bool:
        return len(await stm.entries(limit=None)) >= n

    queue = PartitionKeys(scope.partition).unembedded

    async def indexed() -> bool:
        # the index role reads its queue (filled by the writes while it runs), not the bus
        return bool(r.exists(PartitionKeys(scope.partition).indexing)) and r.zcard(queue) == 0

    try:
        await scope.write_many([WriteRequest(f"step {i}") for i in range(5)])
        await _until(lambda: consolidated(1), 30, "the first summary")
        await _until(indexed, 30, "the index role to settle its queue")
        # Drop every connection of the worker (the test's own client is kept).
        killed = r.client_kill_filter(_type="normal", skipme=True)
        assert killed > 0
        await asyncio.sleep(0.5)
        await scope.write_many([WriteRequest(f"later step {i}") for i in range(5)])
        await _until(lambda: consolidated(2), 30, "a summary after the connections dropped")
        await _until(indexed, 30, "the index queue settled after the drop")
        assert p.poll() is None
    finally:
        text = stop_worker(p, log)
    assert "MaxConnectionsError" not in text


async def test_trim_survives_pending_acked_between_xinfo_and_xpending(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    """XINFO GROUPS says the group has pending events; they are acked before XPENDING,
    which then reports no minimum. The trim goes on (issue 11: AttributeError on None)."""
    r = clean_redis
    bus = PartitionKeys(0).bus
    r.xgroup_create(bus, "summarize", id="0", mkstream=True)
    ids = [r.xadd(bus, {"n": str(i)}) for i in range(6)]
    r.xreadgroup("summarize", "c1", {bus: ">"}, count=6)  # all 6 pending
    real = bb.client.xinfo_groups

    async def xinfo_then_ack(name: str) -> Any:
        reply = await real(name)
        r.xack(bus, "summarize", *ids)  # a consumer acks in between, as in a live worker
        return reply

    bb.client.xinfo_groups = xinfo_then_ack  # type: ignore[method-assign]
    try:
        rep = await bb.trim(partitions=[0])
    finally:
        del bb.client.xinfo_groups
    # Nothing held the group back once acked: trimmed up to its last delivered event.
    assert rep.trimmed.get(0) == 5
    assert [i for i, _ in r.xrange(bus)] == [ids[-1]]


async def test_a_role_that_cannot_consume_gives_its_partitions_up(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    """A bus that every read fails on (here: not a stream) keeps the consume loop failing;
    after a lease TTL the worker releases its partitions instead of holding them unread,
    and takes them again once it can read."""
    from blackboard import keys as K
    from workers.settings import WorkerSettings
    from workers.worker import Worker

    r = clean_redis
    settings = WorkerSettings(heartbeat_ms=200, lease_ttl_ms=1000, block_ms=100)
    w = Worker(bb, "summarize", settings)
    await w.start()

    def held() -> int:
        return sum(1 for k, v in r.hgetall(K.lease_table()).items()
                   if k.startswith(b"h:summarize:") and v.decode() == w.id)

    async def holds(n: int) -> bool:
        return held() == n

    try:
        await _until(lambda: holds(bb.partitions), 10, "the worker to hold every partition")
        bus = PartitionKeys(3).bus
        r.delete(bus)
        r.set(bus, "not a stream")  # every XREADGROUP and XGROUP CREATE fails: WRONGTYPE
        await _until(lambda: holds(0), 15, "the failing worker to release its partitions")
        assert w.leases.current() == set()
        r.delete(bus)
        await _until(lambda: holds(bb.partitions), 20, "the worker to take them back")
    finally:
        await w.stop()
