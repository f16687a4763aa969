"""LoCoMo dev-split evidence recall@k (see shared/bench/locomo/README.md).

Each conversation is one memory (a scope); every dialogue turn is a message with its
session's date; for each question of categories 1-4 with evidence, recall@k is
|evidence ∩ top-k turns| / |evidence|, averaged overall and per category.

    .venv/bin/python -m bench.locomo --mode bm25|hybrid|both [--alpha A] [--engine-only]
        [--before N] [--after N] [--set FIELD=VALUE ...] [--json]

By default through the public API on Redis (an embedded ``redis-server``, or
``BLACKBOARD_REDIS_URL``): each conversation is one agent's memory, each session written
with ``AgentMemory.add_messages`` (the library attaches the conversational context), each
question asked with ``AgentMemory.recall``. The bench builds no text of its own: the
caller's metadata is the turn's ``dia_id`` and an image's caption. ``--engine-only`` is
the fast path: the entries ``add_messages`` would write, straight into an in-process
:class:`SearchEngine`. ``--set`` overrides a :class:`ScoringConfig` field (ablations);
``--before``/``--after`` the turns of context (:class:`ConversationConfig`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from blackboard import Entry
from memory.conversation import ConversationConfig, Message, message_requests
from retrieval import MemoryQuery, ScoringConfig, SearchEngine
from retrieval.embedders import MiniLMEmbedder

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo" / "locomo_dev.json"
if not DATA.exists():
    DATA = Path("/work/shared/bench/locomo/locomo_dev.json")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA = re.compile(r"D\d+:\d+")


@dataclass(frozen=True, slots=True)
class Result:
    mode: str
    questions: int
    r5: float
    r10: float
    per_category: dict[str, tuple[int, float, float]]
    store_s: float
    query_ms_mean: float
    index_s: float = 0.0  # stack: first recall per agent (bootstrap + embedding), not in query
    query_ms_p50: float = 0.0


def _parse_date(s: str) -> datetime:
    return datetime.strptime(s.strip(), "%I:%M %p on %d %B, %Y")


def sessions_of(sample: dict[str, Any]) -> list[tuple[str, list[Message]]]:
    """A conversation as it would reach the library: per session, its messages with their
    session's date (turns one second apart) and the caller's metadata (``dia_id``, and an
    image's caption as ``caption``)."""
    conv = sample["conversation"]
    out = []
    n = 1
    while f"session_{n}" in conv:
        date = conv.get(f"session_{n}_date_time", "")
        base = _parse_date(date) if date else None
        msgs = []
        for i, t in enumerate(conv[f"session_{n}"]):
            md = {"dia_id": t["dia_id"]}
            if t.get("blip_caption"):
                md["caption"] = t["blip_caption"]
            at = base + timedelta(seconds=i) if base is not None else None
            msgs.append(Message(t["speaker"], t.get("text", ""), at, md))
        out.append((f"session_{n}", msgs))
        n += 1
    return out


def engine_entries(scope: str, sample: dict[str, Any], cfg: ConversationConfig) -> list[Entry]:
    """The entries ``add_messages`` would write, built in process (same values, same
    context) for the engine-only path; ``created_at`` is the message's time."""
    out = []
    for session, msgs in sessions_of(sample):
        for m, req in zip(msgs, message_requests(session, msgs, 0, cfg), strict=True):
            at = int(m.at.timestamp() * 1000) if m.at is not None else 0
            out.append(Entry(id=f"{scope}/{m.metadata['dia_id']}", scope=scope,  # type: ignore[index]
                             value=req.value, tags=frozenset(req.tags or ()),
                             metadata=dict(req.metadata or {}), created_at=at, strength_at=at))
    return out


def ask(engine: SearchEngine, scope: str, question: str, k: int, alpha: float | None) -> list[str]:
    """The dia_ids of the top-``k`` turns recalled for ``question``."""
    hits = engine.search(MemoryQuery(query=question, max_results=k, alpha=alpha), [scope])
    return [h.entry.metadata["dia_id"] for h in hits]


def _questions(data: list[dict[str, Any]]) -> list[tuple[str, int, set[str], str]]:
    out = []
    for s in data:
        for qa in s["qa"]:
            cat = int(qa.get("category", 0))
            ev = set(_DIA.findall(" ".join(map(str, qa.get("evidence", [])))))
            if cat in CATEGORIES and ev:
                out.append((s["sample_id"], cat, ev, qa["question"]))
    return out


def _config(alpha: float | None, config: ScoringConfig | None) -> ScoringConfig:
    cfg = config or ScoringConfig()
    return replace(cfg, alpha=alpha) if alpha is not None else cfg


def run(
    mode: str, alpha: float | None = None, conv: ConversationConfig | None = None,
    config: ScoringConfig | None = None, engine_only: bool = False,
    redis_url: str | None = None,
) -> Result:
    conv = conv or ConversationConfig()
    if not engine_only:
        return asyncio.run(run_stack(mode, _config(alpha, config), conv, redis_url))
    data = json.loads(DATA.read_text())
    embedder = MiniLMEmbedder() if mode == "hybrid" else None
    engine = SearchEngine(embedder, _config(alpha, config))
    t0 = time.perf_counter()
    for s in data:
        engine.add(engine_entries(s["sample_id"], s, conv))
    store_s = time.perf_counter() - t0
    rec: dict[int, list[tuple[float, float]]] = defaultdict(list)
    times = []
    for sample, cat, ev, question in _questions(data):
        t = time.perf_counter()
        got = ask(engine, sample, question, 10, alpha)
        times.append(time.perf_counter() - t)
        rec[cat].append((len(ev & set(got[:5])) / len(ev), len(ev & set(got[:10])) / len(ev)))
    return summarise(f"{mode} (engine)", rec, store_s, times)


async def run_stack(
    mode: str, cfg: ScoringConfig, conv: ConversationConfig, redis_url: str | None = None
) -> Result:
    """The benchmark through Redis: ``AgentMemory.add_messages`` per session,
    ``AgentMemory.recall`` per question; one Retriever (one process serving the five
    agents) shared by them."""
    import os
    from contextlib import ExitStack

    from blackboard import Blackboard, RedisServer
    from memory import AgentMemory
    from retrieval import Retriever

    data = json.loads(DATA.read_text())
    with ExitStack() as stack:
        url = redis_url or os.environ.get("BLACKBOARD_REDIS_URL")
        if not url:
            url = stack.enter_context(RedisServer(appendfsync="no")).url
        run_id = f"{int(time.time())}"  # never touch others' data on a given Redis
        async with Blackboard.connect(url) as bb:
            retr = Retriever(bb, embedder=MiniLMEmbedder() if mode == "hybrid" else None,
                             config=cfg)
            mems = {s["sample_id"]: AgentMemory(bb, f"{s['sample_id']}-{run_id}", retriever=retr)
                    for s in data}
            t0 = time.perf_counter()
            for s in data:
                mem = mems[s["sample_id"]]
                mem.configure_conversation(conv)
                for session, msgs in sessions_of(s):
                    await mem.add_messages(session, msgs)
            store_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            for mem in mems.values():  # first recall: bootstrap the index, embed every turn
                await mem.recall("warm up", limit=1)
            index_s = time.perf_counter() - t0
            rec: dict[int, list[tuple[float, float]]] = defaultdict(list)
            times = []
            for sample, cat, ev, question in _questions(data):
                t = time.perf_counter()
                hits = await mems[sample].recall(question, limit=10)
                times.append(time.perf_counter() - t)
                got = [h.entry.metadata["dia_id"] for h in hits]
                rec[cat].append(
                    (len(ev & set(got[:5])) / len(ev), len(ev & set(got[:10])) / len(ev))
                )
            for mem in mems.values():
                await mem.aclose()
            await retr.aclose()
    return summarise(f"{mode} (stack)", rec, store_s, times, index_s)


def summarise(
    mode: str, rec: dict[int, list[tuple[float, float]]], store_s: float, times: list[float],
    index_s: float = 0.0,
) -> Result:
    """Mean recall overall and per category from per-question (R@5, R@10)."""
    qt = sum(times)
    allr = [r for rs in rec.values() for r in rs]
    per = {
        CATEGORIES[c]: (len(rs), sum(r[0] for r in rs) / len(rs), sum(r[1] for r in rs) / len(rs))
        for c, rs in sorted(rec.items())
    }
    return Result(
        mode,
        len(allr),
        sum(r[0] for r in allr) / len(allr),
        sum(r[1] for r in allr) / len(allr),
        per,
        store_s,
        1000 * qt / max(1, len(allr)),
        index_s,
        1000 * float(sorted(times)[len(times) // 2]) if times else 0.0,
    )


def _print(results: list[Result]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"LoCoMo dev evidence recall ({DATA.name})")
    for col in ("mode", "category", "questions", "R@5", "R@10"):
        table.add_column(col, justify="right" if col in ("questions", "R@5", "R@10") else "left")
    for r in results:
        table.add_row(r.mode, "overall", str(r.questions), f"{r.r5:.3f}", f"{r.r10:.3f}")
        for name, (n, r5, r10) in r.per_category.items():
            table.add_row("", name, str(n), f"{r5:.3f}", f"{r10:.3f}")
    Console().print(table)
    for r in results:
        Console().print(
            f"{r.mode}: store {r.store_s:.1f} s, index {r.index_s:.1f} s, "
            f"{r.query_ms_mean:.1f} ms/query (p50 {r.query_ms_p50:.1f})",
            style="dim",
        )


def _overrides(pairs: list[str]) -> ScoringConfig:
    """The default :class:`ScoringConfig` with ``FIELD=VALUE`` overrides (typed as the field)."""
    cfg = ScoringConfig()
    update: dict[str, Any] = {}
    for p in pairs:
        name, sep, value = p.partition("=")
        if not sep or not hasattr(cfg, name):
            raise SystemExit(f"--set {p!r}: expected FIELD=VALUE with a ScoringConfig field")
        update[name] = type(getattr(cfg, name))(value)
    return replace(cfg, **update)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--mode", choices=("bm25", "hybrid", "both"), default="both")
    ap.add_argument("--alpha", type=float, default=None, help="dense weight (default: engine's)")
    ap.add_argument("--before", type=int, default=None, help="turns before joined as context")
    ap.add_argument("--after", type=int, default=None, help="turns after joined as context")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="override a ScoringConfig field (e.g. neighbour_weight=0), repeatable")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ap.add_argument("--engine-only", action="store_true",
                    help="in-process engine only (fast path), no Redis")
    ap.add_argument("--redis-url", default=None, help="default: $BLACKBOARD_REDIS_URL or embedded")
    a = ap.parse_args(argv)
    modes = ("bm25", "hybrid") if a.mode == "both" else (a.mode,)
    d = ConversationConfig()
    conv = replace(d, before=d.before if a.before is None else a.before,
                   after=d.after if a.after is None else a.after)
    cfg = _overrides(a.set)
    results = [run(m, a.alpha, conv, cfg, engine_only=a.engine_only, redis_url=a.redis_url)
               for m in modes]
    if a.json:
        print(json.dumps([asdict(r) for r in results], indent=2))
    else:
        _print(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
