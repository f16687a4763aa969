"""What one idle worker process costs: Redis commands/s, AOF growth, memory, connections.

    .venv/bin/python -P bench/idle_worker.py [--seconds 60] [--role all] [--warmup 15]
        [--agents N --writes W] [--json]

(``-P``: the script's own directory holds a ``consolidation.py`` that would shadow the
package of that name.)

Starts an embedded redis-server (AOF on) unless ``BLACKBOARD_REDIS_URL`` is set (choose the
binary with ``BLACKBOARD_REDIS_SERVER``), then one ``blackboard worker --role <role>``
process with the default settings and nothing written (``--agents N``: N agents with the
default hierarchy installed, each having written ``--writes`` working entries before the
worker starts; it first waits until the worker has handled every event on the buses -- the
model embedded what was written -- then the warm-up, and what is measured is a worker idle
after work, with what the triggers leave buffered). After the warm-up it measures, over
``--seconds``:

* commands/s: the delta of ``INFO commandstats`` calls (commands run inside scripts count,
  as Redis counts them), less the INFO calls of this script; the top commands by count;
* AOF growth per minute (``aof_current_size``);
* the worker's resident memory (VmRSS, and VmHWM, its peak) and the connections it holds;
* error lines in the worker's log (``MaxConnectionsError``, tracebacks) and its exit code
  on SIGTERM.

The worker runs whatever ``workers`` package Python finds first, so the landed code is
measured with ``cd /tmp/before && PYTHONPATH=. python /work/main/bench/idle_worker.py``.
Target (issue 11): <= 20 commands/s, AOF ~0 B/min, < 300 MB without the semantic model;
(issue 23) after work that ran the model: RSS <= 400 MB, <= 20 commands/s. "After work"
also waits for the first pass of the periodic maintenance jobs over what the work wrote
(dedupe, every 120 s by default, reads each entry of a changed scope once: ~11 commands/s
over a minute for 600 entries, once per change, not an idle cost).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from typing import Any

import redis

from blackboard import RedisServer

__all__ = ["IdleFigures", "command_calls", "measure"]


@dataclass
class IdleFigures:
    seconds: float
    commands_per_s: float
    aof_bytes_per_min: float
    rss_mb: float
    peak_rss_mb: float
    connections: int
    max_connections_errors: int
    tracebacks: int
    exit_code: int | None
    top_commands: dict[str, int] = field(default_factory=dict)
    #: seconds the worker took to handle everything written before it started
    settled_s: float = 0.0


def command_calls(r: redis.Redis) -> dict[str, int]:
    """Calls per command since the server started (``INFO commandstats``)."""
    stats = r.info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}


def _status_kb(pid: int, field_name: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
    return 0


def _clients_of(r: redis.Redis, laddr_ports: set[int]) -> int:
    """Connections to Redis whose client port belongs to the worker process."""
    n = 0
    for c in r.client_list():
        port = int(str(c.get("addr", ":0")).rsplit(":", 1)[1])
        if port in laddr_ports:
            n += 1
    return n


def _local_ports(pid: int) -> set[int]:
    """Local TCP ports of ``pid``'s sockets (from /proc, no psutil needed)."""
    inodes = set()
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(f"{fd_dir}/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    if parts[9] in inodes:
                        ports.add(int(parts[1].rsplit(":", 1)[1], 16))
        except FileNotFoundError:
            continue
    return ports


def _backlog(r: redis.Redis) -> int:
    """Events not yet handled: in an inbox, pending or not yet read by a group, in a batch
    being transformed; entries still waiting for a vector (the index role's queue)."""
    from blackboard.keys import CONFIG, PartitionKeys

    n = 0
    for p in range(int(r.hget(CONFIG, "partitions") or 0)):
        k = PartitionKeys(p)
        n += r.llen(k.inbox) + r.hlen(k.inflight)  # not the buffers: triggers hold some
        n += r.zcard(k.unembedded)
        if not r.exists(k.bus):
            continue
        for g in r.xinfo_groups(k.bus):
            n += int(g.get("pending") or 0) + int(g.get("lag") or 0)
    return n


def _wait_settled(r: redis.Redis, limit: float) -> float:
    """Wait until the worker handled every event on the buses (the model ran on what was
    written): -> seconds it took (``limit`` when it did not get there)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if _backlog(r) == 0:
            return round(time.monotonic() - t0, 1)
        time.sleep(0.5)
    return limit


def _first_pass_after(started: float, now: float) -> float:
    """Seconds until each periodic maintenance job (up to dedupe's interval) has run once
    over what the work wrote: dedupe and reindex read every entry of a scope that changed
    since their last pass, once; what an idle worker costs is measured after that. The
    jobs run at the worker's start, then every interval (apscheduler, ``coalesce``)."""
    from workers.settings import WorkerSettings

    every = WorkerSettings().dedupe_every_s
    runs = int((now - started) // every) + 1
    return max(0.0, started + runs * every + 5.0 - now)


def _wait_for_worker(r: redis.Redis, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the worker exited at start with code {proc.returncode}")
        if r.exists("bb:workers:roles") and r.zcard("bb:workers:role:summarize") + r.zcard(
            "bb:workers:role:index"
        ):
            return
        time.sleep(0.2)
    raise SystemExit(f"no worker heartbeat within {timeout}s")


async def _populate(url: str, agents: int, writes: int) -> None:
    from blackboard import Blackboard, WriteRequest
    from memory.hierarchy import install_default_hierarchy

    async with Blackboard.connect(url) as bb:
        for a in range(agents):
            await install_default_hierarchy(bb, f"a{a}")
            if writes:
                await bb.scope(f"agent:a{a}:working").write_many(
                    [WriteRequest(f"agent a{a} step {i}: ran the tests") for i in range(writes)]
                )


def measure(
    url: str, seconds: float, role: str, warmup: float, log_path: str,
    agents: int = 0, writes: int = 0, settle_limit: float = 600.0,
) -> IdleFigures:
    if agents:
        asyncio.run(_populate(url, agents, writes))
    r = redis.Redis.from_url(url)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli", "worker", "--role", role, "--redis-url", url],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    try:
        _wait_for_worker(r, proc, 120)
        started = time.monotonic()
        settled = _wait_settled(r, settle_limit)
        if agents and writes:
            time.sleep(_first_pass_after(started, time.monotonic()))
        time.sleep(warmup)
        before = command_calls(r)
        aof0 = int(r.info("persistence").get("aof_current_size", 0))
        t0 = time.monotonic()
        time.sleep(seconds)
        after = command_calls(r)
        span = time.monotonic() - t0
        aof1 = int(r.info("persistence").get("aof_current_size", 0))
        rss = _status_kb(proc.pid, "VmRSS") / 1024
        peak = _status_kb(proc.pid, "VmHWM") / 1024
        conns = _clients_of(r, _local_ports(proc.pid))
        delta = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        delta["info"] = delta.get("info", 0) - 2  # this script's own INFO commandstats
        total = sum(v for v in delta.values() if v > 0)
        proc.send_signal(signal.SIGTERM)
        try:
            code: int | None = proc.wait(60)
        except subprocess.TimeoutExpired:
            code = None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        r.close()
    with open(log_path, errors="replace") as f:
        text = f.read()
    top = dict(sorted(((k, v) for k, v in delta.items() if v > 0), key=lambda kv: -kv[1])[:30])
    return IdleFigures(
        seconds=round(span, 1),
        commands_per_s=round(total / span, 2),
        aof_bytes_per_min=round((aof1 - aof0) * 60 / span),
        rss_mb=round(rss, 1),
        peak_rss_mb=round(peak, 1),
        connections=conns,
        max_connections_errors=text.count("MaxConnectionsError"),
        tracebacks=text.count("Traceback (most recent call last)"),
        exit_code=code,
        top_commands=top,
        settled_s=settled,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--role", default="all")
    ap.add_argument(
        "--warmup", type=float, default=15.0,
        help="seconds after the first beat (past the readers' claim window after start-up)",
    )
    ap.add_argument("--agents", type=int, default=0, help="agents with the default hierarchy")
    ap.add_argument("--writes", type=int, default=0, help="working entries per agent")
    ap.add_argument("--log", help="keep the worker's log here (default: a temporary file)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    with ExitStack() as stack:
        url = os.environ.get("BLACKBOARD_REDIS_URL")
        if not url:
            url = stack.enter_context(RedisServer()).url
        log_path = a.log or stack.enter_context(tempfile.TemporaryDirectory()) + "/worker.log"
        fig = measure(url, a.seconds, a.role, a.warmup, log_path, a.agents, a.writes)
    out: dict[str, Any] = asdict(fig)
    if a.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:>24}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
