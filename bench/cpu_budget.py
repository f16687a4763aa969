"""Where the CPU went during a benchmark: child processes, Redis and the bench itself.

On a machine whose cores Redis, the workers and the bench share, "CPUs busy" shows when
scaling out ran out of CPU rather than out of parallelism.
"""

from __future__ import annotations

import os
import subprocess
import time
from typing import Any

__all__ = ["cpu_budget", "cpu_seconds"]


def process_cpu(pid: int) -> float | None:
    """CPU seconds (user + system) of a child process, from /proc (None elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def cpu_seconds(bb: Any, ps: list[subprocess.Popen[bytes]]) -> dict[str, float | None]:
    """CPU seconds so far of the workers (summed), Redis (INFO cpu) and this process."""
    info = await bb.client.info("cpu")
    per_worker = [process_cpu(p.pid) for p in ps]
    return {
        "workers": None if None in per_worker else sum(c for c in per_worker if c is not None),
        "redis": float(info["used_cpu_user"]) + float(info["used_cpu_sys"]),
        "bench": time.process_time(),
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
    return out
