"""Progress, not liveness (issue 23): a reader that stops making progress while its group
has events to read is detected, its lease released and a fresh reader takes over; the
stall is one log line and the ``stalls`` counter; heartbeats carry each partition's last
progress."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest

from blackboard import Blackboard, WriteRequest
from memory.registry import Registry
from memory.subscriptions import MemorySubscription, Trigger
from workers.heartbeat import list_workers
from workers.settings import WorkerSettings
from workers.worker import Worker


async def _until(pred: Any, limit_s: float, what: str) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if await pred():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {limit_s}s waiting for {what}")


async def test_a_stalled_reader_is_detected_and_restarted(
    bb: Blackboard, clean_redis: Any, caplog: pytest.LogCaptureFixture
) -> None:
    reg = Registry(bb)
    await reg.save_edge(MemorySubscription("agent:*:working", "agent:{1}:stm", "summarize",
                                           trigger=Trigger.count(3)))
    await reg.aclose()
    settings = WorkerSettings(heartbeat_ms=200, lease_ttl_ms=1000, block_ms=200,
                              claim_idle_ms=500, stall_ms=1500)
    w = Worker(bb, "summarize", settings)
    scope = bb.scope("agent:a1:working")
    p = scope.partition
    real = w.plugin.runner.buffer  # type: ignore[attr-defined]
    hung = asyncio.Event()

    async def hangs_once(partition: int, consumer: str, events: Any) -> Any:
        if partition == p and not hung.is_set():
            hung.set()
            await asyncio.Event().wait()  # as a client call that never returns
        return await real(partition, consumer, events)

    w.plugin.runner.buffer = hangs_once  # type: ignore[attr-defined]
    await w.start()
    stm = bb.scope("agent:a1:stm")
    try:
        await _until(lambda: _holds(w, p), 10, "the worker to hold the partition")
        with caplog.at_level(logging.ERROR, logger="workers.progress"):
            await scope.write_many([WriteRequest(f"step {i}") for i in range(3)])

            async def summarized() -> bool:
                return len(await stm.entries(limit=None)) >= 1

            await _until(summarized, 20, "a summary after the stalled reader was replaced")
        assert hung.is_set() and w.progress.stalls == 1
        lines = [r.getMessage() for r in caplog.records if "made no progress" in r.getMessage()]
        assert len(lines) == 1 and f"partition {p} " in lines[0], lines
        assert w.counters()["stalls"] == 1

        async def beat_shows_progress() -> bool:
            infos = [i for i in await list_workers(bb) if i.id == w.id]
            return bool(infos) and p in infos[0].progress

        await _until(beat_shows_progress, 10, "the heartbeat to carry the progress")
        assert max(w.progress.ages_ms().values()) < 5_000
    finally:
        await w.stop()


async def _holds(w: Worker, p: int) -> bool:
    return p in w.leases.owned


async def test_an_idle_reader_is_not_a_stall(bb: Blackboard, clean_redis: Any) -> None:
    settings = WorkerSettings(heartbeat_ms=200, lease_ttl_ms=1000, block_ms=200, stall_ms=600)
    w = Worker(bb, "summarize", settings)
    await w.start()
    try:
        await asyncio.sleep(2.5)  # several stall periods with nothing to read
        assert w.progress.stalls == 0 and w.leases.owned
    finally:
        await w.stop()


def test_stats_shows_the_age_of_each_partitions_progress_at_80_columns() -> None:
    from rich.console import Console

    from cli.stats import _progress_table
    from workers.heartbeat import WorkerInfo
    from workers.stats import progress_rows

    now = 1_000_000
    ws = [WorkerInfo("summarize-h-1", "summarize", 1, "h", 0, now, (0, 1),
                     progress={p: now - 1_000 * (p + 1) for p in range(16)}),
          WorkerInfo("index-h-1", "index", 1, "h", 0, now, (3,), progress={3: now - 400_000})]
    rows = progress_rows(ws, now)
    assert rows[0] == {"role": "index", "partition": 3, "worker": "index-h-1",
                       "age_ms": 400_000}
    assert [r["age_ms"] for r in rows[1:3]] == [1_000, 2_000]
    con = Console(width=80, record=True)
    con.print(_progress_table(rows))
    out = con.export_text()
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "3:7m" in out and "0:1s" in out and "15:16s" in out
