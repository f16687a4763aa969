"""Redis memory under a sustained write rate the index role cannot follow (issue 23).

    .venv/bin/python bench/sustained_load.py [--rate 171] [--seconds 180] [--json]

Starts an embedded redis-server unless ``BLACKBOARD_REDIS_URL`` is set, and one
``blackboard worker --role all`` (the default embedder: MiniLM, ~90 texts/s on a 2-core
machine). Writes ``--rate`` entries/s into ``--scopes`` working scopes capped at
``--capacity`` entries each, their feeds capped at ``--feed-maxlen`` events (so live
entries and feeds are bounded: what grows beyond them is what the dataflow holds),
samples ``used_memory`` every 5 s and reports the slope (least squares, bytes/s) over the
first minute and after it, bytes per write (slope / rate) and bytes per live entry at the
end. For the "before" figure run it from an older checkout's directory with
``PYTHONPATH=<checkout>`` (the worker is ``python -m cli`` from the current directory): it
only uses the public client API.
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
from typing import Any

from blackboard import Blackboard, RedisServer, ScopePolicy, WriteRequest

WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
         "sierra", "tango", "uniform", "victor", "whiskey")


def _text(i: int) -> str:
    w = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(24)]
    return f"observation {i}: " + " ".join(w)


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (t, y); 0 for fewer than two points."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mt = sum(t for t, _ in points) / n
    my = sum(y for _, y in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    return 0.0 if var == 0 else sum((t - mt) * (y - my) for t, y in points) / var


async def _queue_len(bb: Blackboard) -> int | None:
    vq = getattr(bb, "vector_queue", None)
    if vq is None:
        return None
    return sum([await vq(p).length() for p in range(bb.partitions)])


async def _write_loop(bb: Blackboard, scopes: list[str], rate: float, seconds: float,
                      samples: list[dict[str, Any]], t0: float) -> int:
    written, tick, next_sample = 0, 0.1, 0.0
    per_tick = rate * tick
    owed = 0.0
    while (now := time.monotonic() - t0) < seconds:
        if now >= next_sample:
            mem = await bb.client.info("memory")
            samples.append({"t": round(now, 1), "used_memory": int(mem["used_memory"]),
                            "written": written, "unembedded": await _queue_len(bb)})
            next_sample += 5.0
        owed += per_tick
        n = int(owed)
        owed -= n
        if n:
            by_scope: dict[str, list[WriteRequest]] = {}
            for k in range(n):
                i = written + k
                by_scope.setdefault(scopes[i % len(scopes)], []).append(WriteRequest(_text(i)))
            for s, reqs in by_scope.items():
                await bb.scope(s).write_many(reqs)
            written += n
        await asyncio.sleep(max(0.0, tick * (1 + int(now / tick)) - (time.monotonic() - t0)))
    return written


async def run(url: str, rate: float, seconds: float, nscopes: int, capacity: int,
              feed_maxlen: int, log_path: str) -> dict[str, Any]:
    scopes = [f"agent:load{i}:working" for i in range(nscopes)]
    async with Blackboard.connect(url) as bb:
        for s in scopes:
            await bb.scope(s).set_policy(ScopePolicy(max_entries=capacity,
                                                            feed_maxlen=feed_maxlen))
        with open(log_path, "wb") as log:  # noqa: ASYNC230
            proc = subprocess.Popen(  # noqa: ASYNC220
                [sys.executable, "-m", "cli", "worker", "--role", "all", "--redis-url", url],
                stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        try:
            await asyncio.sleep(10)  # the worker starts, takes its leases, creates groups
            base = int((await bb.client.info("memory"))["used_memory"])
            samples: list[dict[str, Any]] = []
            t0 = time.monotonic()
            written = await _write_loop(bb, scopes, rate, seconds, samples, t0)
            span = time.monotonic() - t0
            end_mem = int((await bb.client.info("memory"))["used_memory"])
            live = sum([len(await bb.scope(s).entries(limit=None)) for s in scopes])
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    pts = [(s["t"], float(s["used_memory"])) for s in samples]
    early = [p for p in pts if p[0] <= 60.0]
    late = [p for p in pts if p[0] >= 60.0]
    s_early, s_late = slope(early), slope(late)
    rate_real = written / span
    return {
        "rate": round(rate_real, 1), "seconds": round(span, 1), "written": written,
        "scopes": nscopes, "capacity": capacity, "feed_maxlen": feed_maxlen, "live_entries": live,
        "base_used_memory": base, "end_used_memory": end_mem,
        "slope_first_minute_bytes_s": round(s_early), "slope_after_bytes_s": round(s_late),
        "bytes_per_write_first_minute": round(s_early / rate_real, 1),
        "bytes_per_write_after": round(s_late / rate_real, 1),
        "bytes_per_live_entry_end": round((end_mem - base) / max(live, 1)),
        "unembedded_end": samples[-1]["unembedded"] if samples else None,
        "samples": samples,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=171.0, help="writes per second")
    ap.add_argument("--seconds", type=float, default=180.0, help="write for this long")
    ap.add_argument("--scopes", type=int, default=20)
    ap.add_argument("--capacity", type=int, default=200, help="max entries per scope")
    ap.add_argument("--feed-maxlen", type=int, default=500,
                    help="events kept per scope feed (default 500; the library's is 10000)")
    ap.add_argument("--log", help="keep the worker's log here (default: a temporary file)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    with ExitStack() as stack:
        url = os.environ.get("BLACKBOARD_REDIS_URL")
        if not url:
            url = stack.enter_context(RedisServer()).url
        log_path = a.log or stack.enter_context(tempfile.TemporaryDirectory()) + "/worker.log"
        res = asyncio.run(run(url, a.rate, a.seconds, a.scopes, a.capacity, a.feed_maxlen,
                             log_path))
    if a.json:
        print(json.dumps(res))
    else:
        show = {k: v for k, v in res.items() if k != "samples"}
        for k, v in show.items():
            print(f"{k:32} {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
