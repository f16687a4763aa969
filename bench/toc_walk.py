"""Index-free search on LoCoMo: walking the table of contents alone (no dense or BM25
index, no embedder) -- how often the evidence turn is reached within N nodes visited.

Each dev conversation is one agent's memory, written with ``AgentMemory.add_messages``;
its table of contents is built from the entries (:func:`consolidation.toc.rebuild`, what
the ``timeline`` role keeps incrementally). For each question with evidence,
:func:`retrieval.toc_walk.walk_toc` walks the table with ``max_nodes`` = N; a question
counts as found when an evidence turn is among the raw entries of the segments reached.
Prints the curve (nodes visited -> fraction found) per category; the target is >= 0.5 of
single-hop questions within 20 nodes.

    .venv/bin/python -m bench.toc_walk [--conversations 1,2] [--json]

Uses ``BLACKBOARD_REDIS_URL`` when set, else an embedded redis-server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.locomo import CATEGORIES, load, scored, sessions_of
from blackboard import Blackboard
from consolidation.toc import rebuild
from memory import AgentMemory
from retrieval.toc_walk import walk_toc
from workers.embedded import redis_or_embedded

BUDGETS = (5, 10, 20, 40, 80)


async def run(url: str, conversations: list[int] | None) -> dict[str, Any]:
    found: dict[str, dict[int, list[bool]]] = defaultdict(lambda: defaultdict(list))
    visited: dict[int, list[int]] = defaultdict(list)
    walk_ms: list[float] = []
    async with Blackboard.connect(url) as bb:
        await bb.client.flushall()
        for k, sample in enumerate(load(conversations)):
            agent = f"conv{k}"
            async with AgentMemory(bb, agent, default_retriever=False) as mem:
                for name, msgs in sessions_of(sample):
                    await mem.add_messages(name, msgs)
                scope = mem.scope_for("episodic")
                await rebuild(bb, scope)
                for qa in sample["qa"]:
                    got = scored(qa)
                    if got is None:
                        continue
                    cat, ev = got
                    for n in BUDGETS:
                        t0 = time.perf_counter()
                        w = await walk_toc(bb, [scope], qa["question"], max_nodes=n)
                        if n == 20:
                            walk_ms.append((time.perf_counter() - t0) * 1000)
                        ids = {e.metadata.get("dia_id") for e in w.entries}
                        found[CATEGORIES[cat]][n].append(bool(ev & ids))
                        visited[n].append(w.nodes_visited)
    curve = {c: {n: sum(v) / len(v) for n, v in by.items()} for c, by in found.items()}
    every = {n: sum(sum(found[c][n]) for c in found) / sum(len(found[c][n]) for c in found)
             for n in BUDGETS}
    return {"curve": curve, "all": every,
            "questions": {c: len(by[BUDGETS[0]]) for c, by in found.items()},
            "mean_visited": {n: sum(v) / len(v) for n, v in visited.items()},
            "walk_ms_mean_at_20": sum(walk_ms) / max(1, len(walk_ms))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conversations", default="", help="1-based, comma-separated")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    convs = [int(x) for x in args.conversations.split(",") if x] or None
    with redis_or_embedded(None) as url:
        res = asyncio.run(run(url, convs))
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    head = "nodes visited  " + "".join(f"{n:>7}" for n in BUDGETS)
    print(head)
    for c in [*CATEGORIES.values()]:
        if c in res["curve"]:
            row = res["curve"][c]
            print(f"{c:<15}" + "".join(f"{row[n]:>7.2f}" for n in BUDGETS)
                  + f"   ({res['questions'][c]} questions)")
    print(f"{'all':<15}" + "".join(f"{res['all'][n]:>7.2f}" for n in BUDGETS))
    print(f"{'mean visited':<15}" + "".join(f"{res['mean_visited'][n]:>7.1f}" for n in BUDGETS))
    hit = res["curve"].get("single-hop", {}).get(20, 0.0)
    print(f"single-hop within 20 nodes: {hit:.2f} (target >= 0.5) "
          f"{'met' if hit >= 0.5 else 'missed'}; walk at 20 nodes: "
          f"{res['walk_ms_mean_at_20']:.1f} ms mean")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
