"""Crash test: workers killed with kill -9 at random moments while 10,000 working-memory
events flow through the summarize edge; every source is consolidated exactly once."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import Counter

import pytest
from workers_support import WorkerProcs

from blackboard import Blackboard, WriteRequest
from blackboard.keys import PartitionKeys
from memory.registry import Registry
from memory.subscriptions import MemorySubscription, Trigger

pytestmark = pytest.mark.slow

N_EVENTS = 10_000
AGENTS = 10


async def _provenance(bb: Blackboard) -> Counter[str]:
    seen: Counter[str] = Counter()
    for a in range(AGENTS):
        for e in await bb.scope(f"agent:a{a}:stm").entries(limit=None):
            seen.update(e.metadata["provenance"]["sources"])
    return seen


async def _state(bb: Blackboard) -> dict[int, object]:
    """What is left per partition (printed when the test fails)."""
    out: dict[int, object] = {}
    for p in range(bb.partitions):
        pk = PartitionKeys(p)
        bufs = {k.decode(): await bb.client.llen(k) for k in await bb.client.smembers(pk.pendings)}
        groups = [
            (g["name"], g["pending"], g.get("lag")) for g in await bb.client.xinfo_groups(pk.bus)
        ]
        out[p] = {
            "buffers": bufs,
            "inflight": await bb.client.hgetall(pk.inflight),
            "groups": groups,
            "dlq": await bb.client.xlen(pk.dlq),
        }
    return out


async def _drained(bb: Blackboard) -> bool:
    for p in range(bb.partitions):
        pk = PartitionKeys(p)
        if await bb.client.scard(pk.pendings) or await bb.client.hlen(pk.inflight):
            return False
        for g in await bb.client.xinfo_groups(pk.bus):
            if int(g["pending"]) or (g.get("lag") not in (0, None)):
                return False
    return True


async def test_kill_9_workers_replays_to_exactly_once(
    redis_url: str, worker_procs: WorkerProcs
) -> None:
    async with Blackboard.connect(redis_url, partitions=8) as bb:
        reg = Registry(bb)
        await reg.save_edge(
            MemorySubscription(
                "agent:*:working",
                "agent:{1}:stm",
                "summarize",
                params={"max_batch": 200},
                trigger=Trigger.any_of(Trigger.count(20), Trigger.age(0.5)),
            )
        )
        await reg.aclose()
        await bb.ensure_groups(["summarize"])
        # Each fire pauses 150 ms between writing its outputs and trimming its buffer, so
        # kills land inside that window too, not only between batches.
        env = {"BLACKBOARD_WORKER_CRASH_WINDOW_MS": "150"}
        workers = [worker_procs.start("summarize", **env) for _ in range(2)]

        kills = 0
        stop = threading.Event()
        rnd = random.Random(1234)

        def killer() -> None:
            nonlocal kills
            while not stop.is_set() or kills < 10:
                time.sleep(rnd.uniform(0.3, 0.9))
                i = rnd.randrange(len(workers))
                worker_procs.kill(workers[i])
                workers[i] = worker_procs.start("summarize", **env)
                kills += 1

        t = threading.Thread(target=killer, daemon=True)
        t.start()
        written: list[str] = []
        # Small chunks keep buffers below max_batch when they fire, so a replay that took
        # "the head, whatever its size now" would take a different batch than the first run.
        chunk_size = 25
        for chunk in range(N_EVENTS // chunk_size):
            a = chunk % AGENTS
            reqs = [
                WriteRequest(
                    {
                        "text": f"agent a{a} step {chunk}-{i}: checked item {i * 7 % 13} "
                        f"and {'fixed' if i % 3 else 'skipped'} it."
                    },
                    tags={"action_type:check", "success"},
                )
                for i in range(chunk_size)
            ]
            es = await bb.scope(f"agent:a{a}:working").write_many(reqs)
            written += [e.id for e in es]
            await asyncio.sleep(0.02)
        stop.set()
        t.join(60)
        assert kills >= 10

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if await _drained(bb) and sum((await _provenance(bb)).values()) >= N_EVENTS:
                break
            await asyncio.sleep(0.5)
        seen = await _provenance(bb)
        import collections
        import sys

        sizes = collections.Counter()
        for a in range(AGENTS):
            for e in await bb.scope(f"agent:a{a}:stm").entries(limit=None):
                sizes[len(e.metadata["provenance"]["sources"])] += 1
        print("SIZES", sorted(sizes.items()), "kills", kills, file=sys.stderr)
        assert len(written) == N_EVENTS
        missing = set(written) - set(seen)
        dupes = {k: v for k, v in seen.items() if v > 1}
        assert not missing, f"{len(missing)} sources never consolidated: {await _state(bb)}"
        assert not dupes, f"{len(dupes)} sources consolidated more than once"
        assert set(seen) == set(written)
        for p in range(bb.partitions):
            assert await bb.client.xlen(PartitionKeys(p).dlq) == 0
        for w in workers:
            assert worker_procs.terminate(w) == 0
