"""What keeping the tables of contents costs, beside summarizing: CPU per event of one
``worker --role timeline`` against one ``worker --role summarize``, on the same backlog,
at the same time (issue 28: at most 15 % of the summarize worker's).

The backlog is ``bench/consolidation.py``'s (N working-memory events over 64 agents, 8
partitions, relayed to the buses before the workers start). Two edges read it: summarize
(working -> stm, batches of 100) and timeline (working -> the working scope's own table).
Each worker's CPU (user + system, from /proc) is taken from when both hold their leases
until its own role is done (its group drained and its own edge's buffers empty); Redis's
CPU is shared by both and printed beside.

    .venv/bin/python bench/toc_cost.py [--events N] [--repeat K] [--floor] [--json]

``--floor`` runs each repeat three times: the real role, then the role cut down to
reading and acking the events (``read``), then to reading them and fetching their
entries (``fetch``), each beside a fresh summarize worker on a fresh backlog
(``bench/toc_floor_worker.py``): what any separate role consuming these events pays
before it places anything, against the 15 % bar.

Uses ``BLACKBOARD_REDIS_URL`` when set, else an embedded redis-server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.consolidation import NAMES, PARTITIONS, WORKER_ENV, _reset, _write_all
from bench.cpu_budget import process_cpu
from bench.drain import remaining
from blackboard import Blackboard
from blackboard.keys import PartitionKeys
from memory.registry import Registry
from memory.subscriptions import MemorySubscription, Trigger
from workers.embedded import redis_or_embedded

ROLES = ("summarize", "timeline")


async def _edges(bb: Blackboard) -> dict[str, str]:
    """The two edges; -> role -> its edge's id."""
    reg = Registry(bb)
    trig = Trigger.any_of(Trigger.count(100), Trigger.age(0.3))
    edges = {r: MemorySubscription("agent:*:working", f"agent:{{1}}:{t}", r,
                                   params={"max_batch": 100}, trigger=trig)
             for r, t in (("summarize", "stm"), ("timeline", "toc"))}
    for e in edges.values():
        await reg.save_edge(e)
    await reg.aclose()
    return {r: e.id for r, e in edges.items()}


async def _left(bb: Blackboard, role: str, edge_id: str) -> int:
    """Events ``role`` has not finished: its group's unconsumed ones plus the items in its
    own edge's buffers (:func:`bench.drain.remaining` counts every edge's buffers, so a
    role done first would be timed, idle, until the other is done too)."""
    unconsumed, _ = await remaining(bb, role)
    keys = [k for p in range(PARTITIONS)
            for k in await bb.client.smembers(PartitionKeys(p).pendings)
            if k.decode().startswith(PartitionKeys(p).pending(edge_id, ""))]
    return unconsumed + sum([int(await bb.client.llen(k)) for k in keys])


async def _placed(bb: Blackboard) -> int:
    from blackboard.toc import TocStore
    from retrieval.toc import TocNode

    n = 0
    for a in NAMES:
        s = f"agent:{a}:working"
        snap = await TocStore(bb, s).read(["root"])
        root = TocNode.from_json(s, "root", snap.nodes["root"])
        n += root.count if root else 0
    return n


def _command(role: str, url: str, floor: str | None) -> list[str]:
    """A worker's command line; the timeline role cut down to ``floor`` when given."""
    args = ["worker", "--role", role, "--redis-url", url]
    if floor is not None and role == "timeline":
        return [sys.executable, str(Path(__file__).with_name("toc_floor_worker.py")), floor,
                *args]
    return [sys.executable, "-m", "cli", *args]


async def run_once(url: str, n: int, floor: str | None = None) -> dict[str, Any]:
    _reset(url)
    async with Blackboard.connect(url, partitions=PARTITIONS) as bb:
        edge_ids = await _edges(bb)
        await bb.ensure_groups(list(ROLES))
        await _write_all(bb, n)
        await bb.relays.relay_all()
        env = {**os.environ, **WORKER_ENV}
        logs = {r: tempfile.NamedTemporaryFile(  # noqa: SIM115 - handed to a child process
            "w+b", prefix=f"bench-{r}-", suffix=".log", delete=False) for r in ROLES}
        ps = {r: subprocess.Popen(  # noqa: ASYNC220 - starting, not waiting
            _command(r, url, floor), env=env, stdout=subprocess.DEVNULL, stderr=logs[r])
            for r in ROLES}
        try:
            deadline = time.monotonic() + 60
            while True:
                holders = (await bb.lease_table.read()).holders
                if all(any(holders.get((r, p)) for p in range(PARTITIONS)) for r in ROLES):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"workers did not start; logs {logs}")
                await asyncio.sleep(0.05)
            cpu0 = {r: process_cpu(p.pid) or 0.0 for r, p in ps.items()}
            info0 = await bb.server_info("cpu")
            t0 = time.perf_counter()
            cpu1: dict[str, float] = {}
            walls: dict[str, float] = {}
            while len(cpu1) < len(ROLES):
                if time.perf_counter() - t0 > 900:
                    raise RuntimeError(f"not drained in 900 s; logs {logs}")
                for r in ROLES:
                    if r not in cpu1 and await _left(bb, r, edge_ids[r]) == 0:
                        cpu1[r] = process_cpu(ps[r].pid) or 0.0
                        walls[r] = time.perf_counter() - t0
                await asyncio.sleep(0.05)
            info1 = await bb.server_info("cpu")
            placed = await _placed(bb)
        finally:
            for p in ps.values():
                p.send_signal(signal.SIGTERM)
            for p in ps.values():
                p.wait(30)
    redis_s = sum(float(info1[k]) - float(info0[k]) for k in ("used_cpu_user", "used_cpu_sys"))
    us = {r: (cpu1[r] - cpu0[r]) / n * 1e6 for r in ROLES}
    return {"events": n, "placed": placed, "floor": floor, "us_per_event": us, "wall_s": walls,
            "redis_us_per_event_both": redis_s / n * 1e6,
            "ratio": us["timeline"] / us["summarize"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--floor", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    floors: tuple[str | None, ...] = (None, "read", "fetch") if args.floor else (None,)
    with redis_or_embedded(None) as url:
        runs = [asyncio.run(run_once(url, args.events, f))
                for _ in range(args.repeat) for f in floors]
    ratios = [r["ratio"] for r in runs if r["floor"] is None]
    out: dict[str, Any] = {"runs": runs, "median_ratio": statistics.median(ratios),
                           "target": 0.15, "load": os.getloadavg()}
    for f in floors[1:]:
        out[f"median_ratio_{f}_only"] = statistics.median(
            r["ratio"] for r in runs if r["floor"] == f)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    for r in runs:
        u = r["us_per_event"]
        role = f"timeline, {r['floor']} only" if r["floor"] else "timeline"
        print(f"{r['events']} events ({r['placed']} placed): summarize "
              f"{u['summarize']:.1f} us/event, {role} {u['timeline']:.1f} us/event "
              f"-> {r['ratio']:.1%}; Redis (both) {r['redis_us_per_event_both']:.1f} "
              f"us/event; drained in {r['wall_s']['summarize']:.1f} / "
              f"{r['wall_s']['timeline']:.1f} s")
    m = out["median_ratio"]
    load = ", ".join(f"{x:.1f}" for x in out["load"])
    print(f"timeline / summarize CPU per event: {m:.1%} median of {len(ratios)} "
          f"(target <= 15%: {'met' if m <= 0.15 else 'missed'}); load {load}")
    for f in floors[1:]:
        print(f"  the role cut down to {f}: {out[f'median_ratio_{f}_only']:.1%} median")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
