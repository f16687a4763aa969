"""Where the CPU went during a benchmark: child processes, Redis and the bench itself.

On a machine whose cores Redis, the workers and the bench share, "CPUs busy" shows when
scaling out ran out of CPU rather than out of parallelism.
"""

from __future__ import annotations

import os
import subprocess
import time
from typing import Any

__all__ = ["cpu_budget", "cpu_seconds", "runqueue_wait"]


def process_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) of a child process, from /proc (None elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def runqueue_wait(pid: int) -> float | None:
    """Seconds the process's threads have spent runnable but waiting for a CPU, from
    /proc/<pid>/task/*/schedstat (None where that is not readable: another host, no
    schedstats)."""
    try:
        total = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return total / 1e9


async def cpu_seconds(bb: Any, ps: list[subprocess.Popen[bytes]]) -> dict[str, float | None]:
    """CPU seconds so far of the workers (summed), Redis (INFO cpu) and this process, and
    the seconds Redis has waited for a CPU (when it runs on this machine)."""
    info = await bb.server_info("cpu")
    pid = (await bb.server_info("server")).get("process_id")
    per_worker = [process_cpu(p.pid) for p in ps]
    return {
        "workers": None if None in per_worker else sum(c for c in per_worker if c is not None),
        "redis": float(info["used_cpu_user"]) + float(info["used_cpu_sys"]),
        "bench": time.process_time(),
        "redis_runqueue": runqueue_wait(int(pid)) if pid is not None else None,
    }


def cpu_budget(
    before: dict[str, float | None], after: dict[str, float | None], n: int, wall: float
) -> dict[str, float | None]:
    """Where the CPU went while the backlog drained: us per event for the workers, Redis
    and this process, and how many CPUs were busy on average. On a machine whose cores
    Redis and the workers share, that last figure shows when scaling out ran out of CPU."""
    out: dict[str, float | None] = {}
    busy = 0.0
    for k in ("workers", "redis", "bench"):
        a, b = before[k], after[k]
        used = None if a is None or b is None else b - a
        out[f"{k}_us_per_event"] = None if used is None else used / n * 1e6
        busy += used or 0.0
    out["cpus_busy"] = busy / wall
    # Redis is single-threaded: while it waits for a CPU (the cores taken by the workers),
    # every client waits for its replies, and a core may sit idle meanwhile.
    a, b = before.get("redis_runqueue"), after.get("redis_runqueue")
    out["redis_runqueue_share"] = None if a is None or b is None else (b - a) / wall
    return out
