"""The index role's embedding rate against the embedder's own on the same texts.

    PYTHONPATH=. python bench/index_rate.py [--n 600] [--scopes 8] [--rounds 5] [--json]

The texts are LoCoMo dev turns (``speaker: text``, short, as an agent stores them), one
entry each, spread over ``--scopes`` working scopes on an embedded ``redis-server``.
Per round, one after the other on the same machine: **raw**, MiniLM (the default
embedder) embedding every text in one call (the model alone: no Redis, no queue), then
**role**, an in-process :class:`workers.indexer.IndexRole` draining the same entries from
the partitions' vector queues (read, embed, settle) until none is left. The ratio is
role / raw texts/s; rounds alternate so a load change on a shared machine hits both.

On a shared machine one round's ratio swings both ways (0.6 - 1.5 at a load of 5 - 15 on 2
cores), so the figures are the median of the rounds' ratios with their spread, the best of
each side, and a CPU ratio that the load moves far less: texts per CPU second, the raw's
process CPU against the role's process CPU plus the Redis server's (``INFO cpu``). And the
share of the role's time the model was embedding (its calls timed): whatever the load, the
role loses to Redis and its own loop only the rest.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.locomo import load, sessions_of
from blackboard import Blackboard, RedisServer
from retrieval.embedders import MiniLMEmbedder
from retrieval.text import entry_text
from workers.indexer import IndexRole


def turns(n: int) -> list[str]:
    out = []
    for sample in load():
        for _session, msgs in sessions_of(sample):
            out += [f"{m.speaker}: {m.text}" for m in msgs]
    return out[:n]


async def queued(bb: Blackboard) -> int:
    return sum([await bb.vector_queue(p).length() for p in range(bb.partitions)])


class TimedMiniLM(MiniLMEmbedder):
    """MiniLM that adds up the wall time of its calls (``busy``), for the model's share of
    the role's time."""

    busy = 0.0

    def embed(self, texts: list[str]) -> Any:
        t0 = time.perf_counter()
        try:
            return super().embed(texts)
        finally:
            self.busy += time.perf_counter() - t0


async def server_cpu(bb: Blackboard) -> float:
    """CPU seconds the Redis server has used so far (user + system, its own threads)."""
    info = await bb.client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


async def role_round(url: str, texts: list[str], scopes: int, emb: TimedMiniLM,
                     tag: str) -> tuple[float, float, float, int]:
    """Seconds the role took to embed ``texts`` written beforehand, the CPU seconds it
    took (this process and the Redis server), the seconds the model was embedding, and
    how many it embedded."""
    async with Blackboard.connect(url) as bb:
        role = IndexRole(bb, f"bench-{tag}", embedder=emb)
        await role._prepare()  # writes queue from now on (as role.start does first)
        per = -(-len(texts) // scopes)
        for i in range(scopes):
            part = texts[i * per : (i + 1) * per]
            if part:
                await bb.scope(f"agent:b{tag}x{i}:working").write_many(part)
        assert await queued(bb) == len(texts)
        c0, s0, b0 = time.process_time(), await server_cpu(bb), emb.busy
        t0 = time.perf_counter()
        await role.start()
        while True:  # the role's own count: no polling of Redis
            if role.embedded >= len(texts):
                break
            await asyncio.sleep(0.02)
        dt = time.perf_counter() - t0
        cpu = time.process_time() - c0 + await server_cpu(bb) - s0
        busy = emb.busy - b0
        await role.stop()
        return dt, cpu, busy, role.embedded


async def run(n: int, scopes: int, rounds: int) -> dict[str, Any]:
    texts = turns(n)
    emb = TimedMiniLM()
    emb.embed(["load the model"])
    # the text the role embeds for a plain string entry is the string itself
    assert entry_text_of(texts[0]) == texts[0]
    raw, role, raw_cpu, role_cpu, busy = [], [], [], [], []
    with RedisServer(appendfsync="no") as srv:
        for r in range(rounds):
            c0, t0 = time.process_time(), time.perf_counter()
            emb.embed(texts)
            raw.append(len(texts) / (time.perf_counter() - t0))
            raw_cpu.append(len(texts) / (time.process_time() - c0))
            dt, cpu, model, done = await role_round(srv.url, texts, scopes, emb, str(r))
            assert done == len(texts), (done, len(texts))
            role.append(done / dt)
            role_cpu.append(done / cpu)
            busy.append(model / dt)
    per_round = [b / a for a, b in zip(raw, role, strict=True)]
    return {"texts": len(texts), "scopes": scopes, "raw_texts_s": raw, "role_texts_s": role,
            "ratio_best": max(role) / max(raw),
            "ratio_per_round": per_round,
            "ratio_median": statistics.median(per_round),
            "raw_texts_per_cpu_s": raw_cpu, "role_texts_per_cpu_s": role_cpu,
            "model_busy_share": busy,
            "cpu_ratio_median": statistics.median(
                b / a for a, b in zip(raw_cpu, role_cpu, strict=True))}


def entry_text_of(value: str) -> str:
    from blackboard import Entry

    return entry_text(Entry(id="x", scope="s:x", value=value))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--scopes", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    out = asyncio.run(run(a.n, a.scopes, a.rounds))
    if a.json:
        print(json.dumps(out, indent=2))
        return 0
    rows = zip(out["raw_texts_s"], out["role_texts_s"], out["raw_texts_per_cpu_s"],
               out["role_texts_per_cpu_s"], strict=True)
    for i, (x, y, cx, cy) in enumerate(rows):
        print(f"round {i + 1}: texts/s embedder alone {x:.1f}, index role {y:.1f} "
              f"({y / x:.2f}x); per CPU s {cx:.1f} / {cy:.1f} ({cy / cx:.2f}x)")
    per, busy = out["ratio_per_round"], out["model_busy_share"]
    print(f"{out['texts']} LoCoMo turns over {out['scopes']} scopes: the index role at "
          f"{out['ratio_median']:.2f}x the embedder's own rate\n  median of {len(per)} "
          f"rounds ({min(per):.2f} - {max(per):.2f}; best of each {out['ratio_best']:.2f}x)"
          f"\n  per CPU second (this process + Redis) {out['cpu_ratio_median']:.2f}x; the "
          f"model embedding {min(busy):.1%} - {max(busy):.1%}\n  of the role's time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
