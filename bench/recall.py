"""Recall latency of SearchEngine vs the raw indexes it wraps, and BM25 speed vs rank-bm25.

For each size: generated entries with realistic lengths (5-80 words, Zipf vocabulary) and
random unit vectors (stored as entry embeddings, so nothing is embedded). Times
SearchEngine.search (pre-filter, both indexes, fusion, scoring) against raw FAISS search
plus raw bm25s retrieve on the same data and pool size, in the same run; then our
BM25Index against rank-bm25 BM25Okapi (a sample of queries: it is slow).

    .venv/bin/python -m bench.recall [--sizes 10000,100000] [--queries 300] [--json]
    .venv/bin/python -m bench.recall --stack [--sizes 10000] [--queries 300]
    ... [--stages on|off]   the second ranking stage (retrieval.rerank), default on

``--stack`` times ``AgentMemory.recall`` on Redis (an embedded ``redis-server``, or
``BLACKBOARD_REDIS_URL``): access rules, level mapping, the read-your-writes check (one
pipelined ``XREVRANGE`` per readable scope, in flight while the engine searches) and the
engine search, against the bare engine and raw FAISS + bm25s on the same data in the same
run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bm25s
import faiss
from rank_bm25 import BM25Okapi

from blackboard import Entry
from retrieval import MemoryQuery, ScoringConfig, SearchEngine
from retrieval.analyzer import Analyzer, _cached_query_terms
from retrieval.bm25 import BM25Index
from retrieval.dense import configure_faiss_threads

DIM = 384


@dataclass(frozen=True, slots=True)
class SizeResult:
    n: int
    build_s: float
    engine_p50_ms: float
    engine_p99_ms: float
    raw_p50_ms: float
    raw_p99_ms: float
    ratio_p50: float
    ratio_p99: float
    bm25_ours_ms: float
    rank_bm25_ms: float
    bm25_speedup: float


class LookupEmbedder:
    """Returns precomputed query vectors, so neither side pays for embedding."""

    name = "bench-random"
    dim = DIM

    def __init__(self) -> None:
        self.table: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts]).astype(np.float32)


def make_texts(n: int, rng: np.random.Generator) -> list[str]:
    vocab = np.array([f"w{i}" for i in range(20_000)])
    ranks = np.arange(1, len(vocab) + 1)
    p = 1.0 / ranks
    p /= p.sum()
    lens = rng.integers(5, 80, n)
    words = rng.choice(vocab, size=int(lens.sum()), p=p)
    out, i = [], 0
    for ln in lens.tolist():
        out.append(" ".join(words[i : i + ln].tolist()))
        i += ln
    return out


def unit(n: int, rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal((n, DIM), dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000, q))


def scoring(stages: bool) -> ScoringConfig:
    """The default config, or with the second stage (retrieval.rerank) off."""
    cfg = ScoringConfig()
    if stages:
        return cfg
    return replace(cfg, speaker_boost=0.0, neighbour_weight=0.0, time_boost=0.0)


def run_size(
    n: int, n_queries: int, okapi_queries: int, seed: int = 0, stages: bool = True
) -> SizeResult:
    rng = np.random.default_rng(seed)
    texts = make_texts(n, rng)
    vecs = unit(n, rng)
    emb = LookupEmbedder()
    cfg = scoring(stages)
    t0 = time.perf_counter()
    eng = SearchEngine(emb, cfg)
    eng.add(
        Entry(
            id=f"e{i}",
            scope="bench",
            value=t,
            created_at=i,
            embedding=vecs[i].tobytes(),
            embedder=emb.name,
        )
        for i, t in enumerate(texts)
    )
    build_s = time.perf_counter() - t0
    # raw baselines over the same data
    raw_faiss = faiss.IndexFlatIP(DIM)
    raw_faiss.add(vecs)
    analyzer = Analyzer()
    raw_bm25 = bm25s.BM25()
    raw_bm25.index(analyzer.terms(texts), show_progress=False)
    queries = [" ".join(texts[i].split()[:4]) for i in rng.integers(0, n, n_queries)]
    qvecs = unit(n_queries, rng)
    for q, v in zip(queries, qvecs, strict=True):
        emb.table[q] = v
    pool = max(cfg.candidates, cfg.candidate_factor * 10)
    eng_t: list[float] = []
    raw_t: list[float] = []
    for q in queries:
        t = time.perf_counter()
        eng.search(MemoryQuery(query=q, max_results=10), ["bench"], now_ms=n)
        eng_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        raw_faiss.search(emb.embed([q]), pool)
        qt = analyzer.terms([q])
        raw_bm25.retrieve(qt, k=min(pool, n), show_progress=False, n_threads=1)
        raw_t.append(time.perf_counter() - t)
    ours = BM25Index(background=False)
    ours.add(list(range(n)), texts)
    sample = queries[:okapi_queries]
    t = time.perf_counter()
    for q in sample:
        ours.search(q, 10)
    ours_ms = 1000 * (time.perf_counter() - t) / len(sample)
    okapi = BM25Okapi(analyzer.terms(texts))
    t = time.perf_counter()
    for q in sample:
        s = okapi.get_scores(analyzer.terms([q])[0])
        np.argpartition(-s, 10)[:10]
    okapi_ms = 1000 * (time.perf_counter() - t) / len(sample)
    e50, e99, r50, r99 = pct(eng_t, 50), pct(eng_t, 99), pct(raw_t, 50), pct(raw_t, 99)
    return SizeResult(
        n, build_s, e50, e99, r50, r99, e50 / r50, e99 / r99, ours_ms, okapi_ms, okapi_ms / ours_ms
    )


@dataclass(frozen=True, slots=True)
class StackResult:
    n: int
    stack_p50_ms: float
    stack_p99_ms: float
    engine_p50_ms: float
    engine_p99_ms: float
    raw_p50_ms: float
    raw_p99_ms: float
    stack_vs_raw_p50: float
    stack_vs_engine_p50: float
    engine_vs_raw_p50: float


async def _stack_size(
    url: str, n: int, n_queries: int, seed: int = 0, stages: bool = True
) -> StackResult:
    from blackboard import Blackboard, WriteRequest
    from memory import AgentMemory, MemoryLevel
    from retrieval import Retriever

    rng = np.random.default_rng(seed)
    texts = make_texts(n, rng)
    vecs = unit(n, rng)
    emb = LookupEmbedder()
    agent = f"bench{n}-{int(time.time())}"
    async with Blackboard.connect(url) as bb:
        retr = Retriever(bb, embedder=emb, config=scoring(stages))
        async with AgentMemory(bb, agent, retriever=retr) as mem:
            await mem.store("warm", MemoryLevel.EPISODIC)
            sc = bb.scope(mem.scope_for(MemoryLevel.EPISODIC))
            for i in range(0, n, 1000):
                await sc.write_many(
                    WriteRequest(t, embedding=vecs[i + j].tobytes(), embedder=emb.name)
                    for j, t in enumerate(texts[i : i + 1000])
                )
            queries = [" ".join(texts[i].split()[:4]) for i in rng.integers(0, n, n_queries)]
            for q, v in zip(queries, unit(n_queries, rng), strict=True):
                emb.table[q] = v
            emb.table["warm"] = vecs[0]
            await mem.recall("warm")  # bootstrap the index
            raw_faiss = faiss.IndexFlatIP(DIM)
            raw_faiss.add(vecs)
            analyzer = Analyzer()
            raw_bm25 = bm25s.BM25()
            raw_bm25.index(analyzer.terms(texts), show_progress=False)
            cfg = retr.engine.config
            pool = max(cfg.candidates, cfg.candidate_factor * 10)
            scopes = mem.readable_scopes()
            st: list[float] = []
            et: list[float] = []
            rt: list[float] = []

            async def stack_side(q: str) -> None:
                await mem.recall(q, max_results=10)

            async def engine_side(q: str) -> None:
                retr.engine.search(MemoryQuery(query=q, max_results=10), scopes)

            async def raw_side(q: str) -> None:
                raw_faiss.search(emb.embed([q]), pool)
                raw_bm25.retrieve(analyzer.terms([q]), k=min(pool, n), show_progress=False,
                                  n_threads=1)

            sides = [(stack_side, st), (engine_side, et), (raw_side, rt)]
            for i, q in enumerate(queries):
                # The sides take turns going first: the first finds the caches the previous
                # query's last side left (the raw and our indexes each hold ~15 MB of
                # vectors at 10k), the next ones find the query's own data warm.
                for side, out in sides[i % 3:] + sides[:i % 3]:
                    # each side analyses the query itself (raw does): no warm term cache
                    _cached_query_terms.cache_clear()
                    t = time.perf_counter()
                    await side(q)
                    out.append(time.perf_counter() - t)
        await retr.aclose()
    s50, e50, r50 = pct(st, 50), pct(et, 50), pct(rt, 50)
    return StackResult(n, s50, pct(st, 99), e50, pct(et, 99), r50, pct(rt, 99),
                       s50 / r50, s50 / e50, e50 / r50)


def run_stack(sizes: list[int], n_queries: int, stages: bool = True) -> list[StackResult]:
    import asyncio
    import os
    from contextlib import ExitStack

    from blackboard import RedisServer

    with ExitStack() as stack:
        url = os.environ.get("BLACKBOARD_REDIS_URL") or stack.enter_context(
            RedisServer(appendfsync="no")
        ).url
        return [asyncio.run(_stack_size(url, n, n_queries, stages=stages)) for n in sizes]


def _print_stack(results: list[StackResult]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="AgentMemory.recall on Redis vs SearchEngine vs raw FAISS + bm25s")
    for c in ("entries", "stack p50/p99 ms", "engine p50/p99 ms", "raw p50/p99 ms",
              "stack/raw", "stack/engine", "engine/raw"):
        table.add_column(c, justify="right")
    for r in results:
        table.add_row(f"{r.n:,}", f"{r.stack_p50_ms:.2f} / {r.stack_p99_ms:.2f}",
                      f"{r.engine_p50_ms:.2f} / {r.engine_p99_ms:.2f}",
                      f"{r.raw_p50_ms:.2f} / {r.raw_p99_ms:.2f}", f"{r.stack_vs_raw_p50:.2f}",
                      f"{r.stack_vs_engine_p50:.2f}", f"{r.engine_vs_raw_p50:.2f}")
    Console().print(table)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated entry counts")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--okapi-queries", type=int, default=20, help="rank-bm25 sample size")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--stack", action="store_true", help="time AgentMemory.recall on Redis")
    ap.add_argument("--stages", choices=("on", "off"), default="on",
                    help="the second ranking stage (speaker, neighbours, time): default on")
    a = ap.parse_args(argv)
    stages = a.stages == "on"
    configure_faiss_threads()
    if a.stack:
        stack = run_stack([int(s) for s in a.sizes.split(",")], a.queries, stages)
        if a.json:
            print(json.dumps([asdict(r) for r in stack], indent=2))
        else:
            _print_stack(stack)
        return 0
    results = [run_size(int(s), a.queries, a.okapi_queries, stages=stages)
               for s in a.sizes.split(",")]
    if a.json:
        print(json.dumps([asdict(r) for r in results], indent=2))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title="recall latency: SearchEngine vs raw FAISS + bm25s; BM25 vs rank-bm25")
    cols = [
        "entries",
        "build s",
        "engine p50/p99 ms",
        "raw p50/p99 ms",
        "ratio p50/p99",
        "bm25 ours ms",
        "rank-bm25 ms",
        "speed-up",
    ]
    for c in cols:
        table.add_column(c, justify="right")
    for r in results:
        table.add_row(
            f"{r.n:,}",
            f"{r.build_s:.1f}",
            f"{r.engine_p50_ms:.2f} / {r.engine_p99_ms:.2f}",
            f"{r.raw_p50_ms:.2f} / {r.raw_p99_ms:.2f}",
            f"{r.ratio_p50:.2f} / {r.ratio_p99:.2f}",
            f"{r.bm25_ours_ms:.2f}",
            f"{r.rank_bm25_ms:.1f}",
            f"{r.bm25_speedup:.0f}x",
        )
    Console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
