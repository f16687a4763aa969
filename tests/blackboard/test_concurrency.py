"""Several OS processes writing one scope: counters stay exact, capacity is never exceeded."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

import pytest
import redis

from blackboard import Blackboard, EventType, ScopePolicy

pytestmark = pytest.mark.process  # writer processes

SCOPE = "team:t1"
PROCS = 4


def _spawn(scripts_dir: str, url: str, n: int) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen(
            [sys.executable, os.path.join(scripts_dir, "writer.py"), url, SCOPE, str(n), str(seed)],
            stderr=subprocess.PIPE,
        )
        for seed in range(PROCS)
    ]


def _wait(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err.decode()[-2000:]


async def test_concurrent_writers_keep_counters_exact(
    bb: Blackboard, redis_url: str, clean_redis: redis.Redis, assert_consistent: Any
) -> None:
    _wait(_spawn(scripts_dir(), redis_url, 150))
    s = bb.scope(SCOPE)
    k = s.keys
    counts = {t.decode(): int(v) for t, v in clean_redis.hgetall(k.tags).items()}
    real = {t: clean_redis.scard(k.tag_set(t)) for t in "abcde"}
    assert counts == {t: n for t, n in real.items() if n}
    assert await s.count() == clean_redis.zcard(k.ix) > 100
    assert await s.tags() == counts
    await assert_consistent(s)
    # One written event per entry ever created, one deleted per entry gone.
    evs = await s.events(count=None)
    written = sum(e.type == EventType.WRITTEN for e in evs)
    deleted = sum(e.type == EventType.DELETED for e in evs)
    assert written - deleted == clean_redis.zcard(k.ix)


async def test_capacity_holds_under_concurrent_writers(
    bb: Blackboard, redis_url: str, clean_redis: redis.Redis, assert_consistent: Any
) -> None:
    s = bb.scope(SCOPE)
    await s.set_policy(ScopePolicy(max_entries=25))
    procs = _spawn(scripts_dir(), redis_url, 120)
    peak = 0
    while any(p.poll() is None for p in procs):
        peak = max(peak, clean_redis.zcard(s.keys.ix))
        await asyncio.sleep(0.002)
    _wait(procs)
    assert 0 < peak <= 25
    assert await s.count() == 25
    evs = await s.events(count=None)
    created = sum(e.type == EventType.WRITTEN for e in evs)
    gone = sum(e.type in (EventType.EVICTED, EventType.DELETED) for e in evs)
    assert created - gone == 25 and any(e.type == EventType.EVICTED for e in evs)
    await assert_consistent(s)


def scripts_dir() -> str:
    return os.path.join(os.path.dirname(__file__), "procs")
