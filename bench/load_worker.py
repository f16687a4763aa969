"""Many agents writing and recalling against one worker process, then how long until every
consumer group has caught up (issue 11: 32 agents for 60 s against one ``--role all``
worker, every group's lag back to 0 within a minute after).

    .venv/bin/python bench/load_worker.py [--agents 32] [--seconds 60] [--json]

Starts an embedded redis-server unless ``BLACKBOARD_REDIS_URL`` is set, one
``blackboard worker --role all`` with the default settings, then N agents in this process
(``AgentMemory`` with the default hierarchy, the BM25 retriever: the load is the worker's,
not the embedder's), each storing a step and recalling in a loop. Prints writes and recalls
per second, the seconds from the end of the load until nothing waits anywhere (inboxes,
group lag and pending, edge buffers, batches in flight), the worker's error lines and its
exit code on SIGTERM.
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from drain import remaining

from blackboard import Blackboard, RedisServer


async def _agent(bb: Blackboard, name: str, until: float, counts: list[int],
                 retriever: object) -> None:
    from memory import AgentMemory, MemoryLevel

    async with AgentMemory(bb, name, teams=["load"], retriever=retriever) as mem:  # type: ignore[arg-type]
        await mem.install_default_hierarchy()
        i = 0
        while time.monotonic() < until:
            await mem.store({"text": f"{name} step {i}: ran job {i % 7}"}, MemoryLevel.WORKING,
                            tags={"action", f"action_type:job{i % 7}"})
            counts[0] += 1
            await mem.recall(f"job {i % 7}", max_results=5)
            counts[1] += 1
            i += 1


async def _lag(bb: Blackboard) -> int:
    """Events some group has not taken in yet: not relayed, undelivered, unacked (what the
    edge buffers hold waits on its triggers, by design, and is not lag), and the entries
    waiting for a vector (the index role reads its queue, not the bus)."""
    total = 0
    for group in ("summarize", "episodic", "semantic", "procedural", "team"):
        total += (await remaining(bb, group))[0]
    for p in range(bb.partitions):
        total += await bb.vector_queue(p).length()
    return total


async def run(url: str, agents: int, seconds: float, drain_s: float) -> dict[str, object]:
    from retrieval import Retriever

    counts = [0, 0]
    async with Blackboard.connect(url) as bb:
        # One retriever for the process, as a gateway would hold: the agents' recalls share
        # its indexes and feed followers.
        shared = Retriever(bb)
        t0 = time.monotonic()
        until = t0 + seconds
        await asyncio.gather(*(_agent(bb, f"l{a}", until, counts, shared)
                               for a in range(agents)))
        load_s = time.monotonic() - t0
        t1 = time.monotonic()
        caught_up = None
        while time.monotonic() - t1 < drain_s:
            if await _lag(bb) == 0:
                caught_up = time.monotonic() - t1
                break
            await asyncio.sleep(0.5)
        await shared.aclose()
    return {"agents": agents, "seconds": round(load_s, 1),
            "writes_per_s": round(counts[0] / load_s), "recalls_per_s": round(counts[1] / load_s),
            "caught_up_after_s": None if caught_up is None else round(caught_up, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agents", type=int, default=32)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--drain", type=float, default=60.0, help="seconds allowed to catch up")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    with ExitStack() as stack:
        url = os.environ.get("BLACKBOARD_REDIS_URL") or stack.enter_context(RedisServer()).url
        log = tempfile.NamedTemporaryFile("w+b", suffix=".log", delete=False)  # noqa: SIM115
        env = {**os.environ, "BLACKBOARD_REDIS_URL": url}
        proc = subprocess.Popen([sys.executable, "-m", "cli", "worker", "--role", "all"],
                                env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            time.sleep(3)
            res = asyncio.run(run(url, a.agents, a.seconds, a.drain))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                code: int | None = proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = None
        text = Path(log.name).read_text(errors="replace")
        res |= {"worker_exit_code": code, "log": log.name,
                "max_connections_errors": text.count("MaxConnectionsError"),
                "tracebacks": text.count("Traceback (most recent call last)")}
    if a.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print(f"{k:>24}: {v}")
    ok = res["caught_up_after_s"] is not None and not res["max_connections_errors"]
    print("target met" if ok else "target MISSED", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
