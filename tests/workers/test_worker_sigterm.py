"""SIGTERM stops a worker within 10 s whatever it is doing, exit 0, and nothing is lost: an
in-flight embedding batch is abandoned and re-delivered (issue 23)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import redis
from workers_support import FAST, wait_until

from blackboard import Blackboard, WriteRequest
from blackboard.keys import PartitionKeys, ScopeKeys
from memory.registry import Registry
from memory.subscriptions import MemorySubscription, Trigger
from retrieval.embedders.minilm import MINILM_NAME, minilm_available

pytestmark = pytest.mark.process  # worker processes

#: The bound the issue sets: SIGTERM to exit.
STOP_BOUND_S = 10.0


def _start(url: str, role: str, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as f:
        return subprocess.Popen(
            [sys.executable, "-m", "cli", "worker", "--role", role, "--redis-url", url],
            env={**os.environ, **FAST, "PYTHONUNBUFFERED": "1"},
            stdout=f, stderr=subprocess.STDOUT,
        )


def _sigterm(p: subprocess.Popen[bytes], log: Path) -> float:
    """SIGTERM ``p``; -> seconds to its exit, which must be 0 within the bound."""
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
        code = p.wait(STOP_BOUND_S + 20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        tail = log.read_text(errors="replace")[-3000:]
        raise AssertionError(f"still running 30 s after SIGTERM:\n{tail}") from None
    took = time.monotonic() - t0
    assert code == 0, log.read_text(errors="replace")[-3000:]
    assert took <= STOP_BOUND_S, f"exited {took:.1f}s after SIGTERM (bound {STOP_BOUND_S}s)"
    return took


def _group(r: redis.Redis, bus: str, name: str) -> dict[str, int]:
    if not r.exists(bus):  # written events wait in the inbox until a reader relays them
        return {"pending": 0, "lag": -1}
    for g in r.xinfo_groups(bus):
        if g["name"].decode() == name:
            return {"pending": int(g["pending"]), "lag": int(g.get("lag") or 0)}
    return {"pending": 0, "lag": -1}


@pytest.mark.skipif(minilm_available() is not None, reason="MiniLM is not installed")
async def test_index_role_mid_embedding_stops_and_the_batch_is_redelivered(
    bb: Blackboard, clean_redis: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    r = clean_redis
    scope = bb.scope("agent:a1:working")
    queue = PartitionKeys(scope.partition).unembedded
    text = "the quarterly budget review moved to thursday after the audit " * 12
    entries = await scope.write_many([WriteRequest(f"{i}: {text}") for i in range(400)])
    ids = [e.id for e in entries]
    log = tmp_path / "index.log"

    keys = [ScopeKeys(scope.id, scope.partition).entry(i) for i in ids]

    p = _start(redis_url, "index", log)
    try:
        # The role queued what was written before it (the queue was off), and the model is
        # running: the first batch is stored, most entries still wait.
        wait_until(lambda: r.zcard(queue) > 0, 60, "the entries queued")
        wait_until(lambda: any(r.hget(k, "embedder") for k in keys), 120, "a first batch")
        await asyncio.sleep(0.3)  # into the next batch
        _sigterm(p, log)
        assert r.zcard(queue) > 0  # abandoned, still queued, not lost
        p = _start(redis_url, "index", log)
        wait_until(lambda: r.zcard(queue) == 0, 240,
                   "the next worker to embed what was abandoned")
        got = await scope.get_many([e.id for e in entries])
        assert all(e is not None and e.embedder == MINILM_NAME for e in got)
        _sigterm(p, log)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


async def test_role_all_mid_work_stops_and_nothing_is_lost(
    bb: Blackboard, clean_redis: redis.Redis, redis_url: str, tmp_path: Path
) -> None:
    r = clean_redis
    reg = Registry(bb)
    await reg.save_edge(MemorySubscription("agent:*:working", "agent:{1}:stm", "summarize",
                                           trigger=Trigger.any_of(Trigger.count(5),
                                                                          Trigger.age(0.5))))
    await reg.aclose()
    scopes = [bb.scope(f"agent:a{i}:working") for i in range(4)]
    log = tmp_path / "all.log"
    p = _start(redis_url, "all", log)
    try:
        wait_until(lambda: r.zcard("bb:workers:role:summarize") > 0, 60, "the worker")
        written: list[str] = []
        for n in range(10):  # work in flight on every role when the signal lands
            for s in scopes:
                got = await s.write_many([WriteRequest(f"round {n} step {i}") for i in range(10)])
                written += [e.id for e in got]
        _sigterm(p, log)
        p = _start(redis_url, "all", log)
        buses = {PartitionKeys(s.partition).bus for s in scopes}

        parts = {PartitionKeys(s.partition) for s in scopes}

        def drained() -> bool:
            held = sum(r.scard(k.pendings) + r.hlen(k.inflight) + r.llen(k.inbox)
                       for k in parts)
            return not held and not any(r.zcard(k.unembedded) for k in parts) and all(
                _group(r, b, "summarize") == {"pending": 0, "lag": 0} for b in buses)

        wait_until(drained, 240, "the next worker to handle everything")
        sources: Counter[str] = Counter()
        for i in range(4):
            for e in await bb.scope(f"agent:a{i}:stm").entries(limit=None):
                sources.update(e.metadata["provenance"]["sources"])
        lost = set(written) - set(sources)
        assert not lost, f"{len(lost)} of {len(written)} not consolidated"  # none lost ...
        assert max(sources.values()) == 1  # ... none summarized twice
        _sigterm(p, log)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
