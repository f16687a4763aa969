"""The index role's embedding rate against the embedder's own on the same texts.

    PYTHONPATH=. python bench/index_rate.py [--n 600] [--scopes 8] [--rounds 2] [--json]

The texts are LoCoMo dev turns (``speaker: text``, short, as an agent stores them), one
entry each, spread over ``--scopes`` working scopes on an embedded ``redis-server``.
Per round, one after the other on the same machine: **raw**, MiniLM (the default
embedder) embedding every text in one call (the model alone: no Redis, no queue), then
**role**, an in-process :class:`workers.indexer.IndexRole` draining the same entries from
the partitions' vector queues (read, embed, settle) until none is left. The ratio is
role / raw texts/s; rounds alternate so a load change on a shared machine hits both.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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


async def role_round(url: str, texts: list[str], scopes: int, emb: MiniLMEmbedder,
                     tag: str) -> tuple[float, int]:
    """Seconds the role took to embed ``texts`` written beforehand, and how many."""
    async with Blackboard.connect(url) as bb:
        role = IndexRole(bb, f"bench-{tag}", embedder=emb)
        await role._prepare()  # writes queue from now on (as role.start does first)
        per = -(-len(texts) // scopes)
        for i in range(scopes):
            part = texts[i * per : (i + 1) * per]
            if part:
                await bb.scope(f"agent:b{tag}x{i}:working").write_many(part)
        assert await queued(bb) == len(texts)
        t0 = time.perf_counter()
        await role.start()
        while True:  # the role's own count: no polling of Redis
            if role.embedded >= len(texts):
                break
            await asyncio.sleep(0.02)
        dt = time.perf_counter() - t0
        await role.stop()
        return dt, role.embedded


async def run(n: int, scopes: int, rounds: int) -> dict[str, Any]:
    texts = turns(n)
    emb = MiniLMEmbedder()
    emb.embed(["load the model"])
    # the text the role embeds for a plain string entry is the string itself
    assert entry_text_of(texts[0]) == texts[0]
    raw, role = [], []
    with RedisServer(appendfsync="no") as srv:
        for r in range(rounds):
            t0 = time.perf_counter()
            emb.embed(texts)
            raw.append(len(texts) / (time.perf_counter() - t0))
            dt, done = await role_round(srv.url, texts, scopes, emb, str(r))
            assert done == len(texts), (done, len(texts))
            role.append(done / dt)
    best_raw, best_role = max(raw), max(role)
    return {"texts": len(texts), "scopes": scopes, "raw_texts_s": raw, "role_texts_s": role,
            "ratio_best": best_role / best_raw,
            "ratio_per_round": [b / a for a, b in zip(raw, role, strict=True)]}


def entry_text_of(value: str) -> str:
    from blackboard import Entry

    return entry_text(Entry(id="x", scope="s:x", value=value))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--scopes", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    out = asyncio.run(run(a.n, a.scopes, a.rounds))
    if a.json:
        print(json.dumps(out, indent=2))
        return 0
    for i, (x, y) in enumerate(zip(out["raw_texts_s"], out["role_texts_s"], strict=True)):
        print(f"round {i + 1}: embedder alone {x:.1f} texts/s, index role {y:.1f} texts/s "
              f"({y / x:.2f}x)")
    print(f"{out['texts']} LoCoMo turns over {out['scopes']} scopes; best of each: "
          f"{out['ratio_best']:.2f}x the embedder's own rate")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
