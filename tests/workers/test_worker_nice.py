"""A worker is background work: it runs niced (BLACKBOARD_WORKER_NICE, 10 by default), every
thread of it, the model's included, so that on a shared machine Redis, the gateway and the
agents get the cores first."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
import redis
from edges_support import wait_ready
from workers_support import WorkerProcs

from blackboard import Blackboard, InvalidArgument
from workers.settings import WorkerSettings


def _thread_nice(pid: int) -> list[int]:
    """The niceness of each of ``pid``'s threads (field 19 of /proc/<pid>/task/<tid>/stat)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        stat = (task / "stat").read_text()
        out.append(int(stat[stat.rindex(")") + 2:].split()[16]))
    return out


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc (Linux)")
async def test_a_worker_and_every_thread_of_it_runs_niced(
    bb: Blackboard, clean_redis: redis.Redis, worker_procs: WorkerProcs
) -> None:
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    niced = worker_procs.start("index")
    kept = worker_procs.start("summarize", BLACKBOARD_WORKER_NICE="0")
    await wait_ready(bb, clean_redis, ("index", "summarize"))
    # the model's threads exist once it has embedded something
    e = await bb.scope("agent:a1:working").write("the model runs for this one")
    for _ in range(600):
        got = await bb.scope("agent:a1:working").get(e.id)
        if got is not None and got.embedding is not None:
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("the index worker stored no vector in 60 s")
    assert os.getpriority(os.PRIO_PROCESS, niced.pid) == max(mine, 10)
    threads = _thread_nice(niced.pid)
    assert len(threads) > 2 and set(threads) == {max(mine, 10)}
    assert set(_thread_nice(kept.pid)) == {mine}  # 0: the priority it was started with


def test_a_bad_niceness_is_refused_naming_the_variable() -> None:
    assert WorkerSettings.from_env({}).nice == 10
    for bad in ("20", "-1", "x"):
        with pytest.raises(InvalidArgument, match="BLACKBOARD_WORKER_NICE"):
            WorkerSettings.from_env({"BLACKBOARD_WORKER_NICE": bad})
