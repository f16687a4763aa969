"""kill -9 of a consumer mid-batch: another consumer claims its events; nothing is lost."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from blackboard import Blackboard, EventType

pytestmark = pytest.mark.process  # consumer processes, killed

N = 60
PROC = os.path.join(os.path.dirname(__file__), "procs", "crash_consumer.py")


def _start(
    url: str, name: str, sleep_s: float, idle_ms: int, ready: Path
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, PROC, url, name, str(N), str(sleep_s), str(idle_ms), str(ready)],
        stderr=subprocess.PIPE,
    )


@pytest.mark.slow
async def test_kill_9_mid_batch_loses_nothing(
    bb: Blackboard, redis_url: str, clean_redis: redis.Redis, tmp_path: Path
) -> None:
    src = bb.scope("agent:crash:working")
    ids = [e.id for e in await src.write_many([{"i": i} for i in range(N)])]
    await bb.ensure_groups(["crash"])

    ready = tmp_path / "ready"
    first = _start(redis_url, "c1", 0.05, 60_000, ready)
    deadline = time.monotonic() + 15
    while not ready.exists():
        assert first.poll() is None, first.stderr.read().decode() if first.stderr else ""
        assert time.monotonic() < deadline, "first consumer never got going"
        await asyncio.sleep(0.01)
    first.send_signal(signal.SIGKILL)  # mid-batch: 5 of 20 events of its batch processed
    first.wait()
    done_at_kill = clean_redis.scard("test:crash:done")
    assert 5 <= done_at_kill < 20
    pend = clean_redis.xpending(src.keys.part.bus, "crash")
    assert pend["pending"] == 20  # the whole batch is pending for the dead consumer

    second = _start(redis_url, "c2", 0.0, 300, tmp_path / "ready2")
    _, err = second.communicate(timeout=30)
    assert second.returncode == 0, err.decode()[-2000:]

    done = {m.decode() for m in clean_redis.smembers("test:crash:done")}
    assert done == set(ids)  # every event processed, none lost
    times = {k.decode(): int(v) for k, v in clean_redis.hgetall("test:crash:times").items()}
    assert set(times) == set(ids)
    # Re-processed at most once more, and only events of the killed batch.
    again = {i for i, t in times.items() if t > 1}
    assert all(t <= 2 for t in times.values())
    assert again <= set(ids[:20]) and len(again) <= done_at_kill + 1
    # The effects were idempotent: one derived entry (and one written event) per source.
    derived = bb.scope("agent:crash:derived")
    assert await derived.count() == N
    assert sum(e.type == EventType.WRITTEN for e in await derived.events()) == N
    assert clean_redis.xpending(src.keys.part.bus, "crash")["pending"] == 0
