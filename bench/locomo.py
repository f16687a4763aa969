"""LoCoMo dev-split evidence recall@k (see shared/bench/locomo/README.md).

Each conversation is one memory (a scope); every dialogue turn is a message with its
session's date; for each question of categories 1-4 with evidence, recall@k is
|evidence ∩ top-k turns| / |evidence|, averaged overall and per category.

    .venv/bin/python -m bench.locomo --mode bm25|hybrid|both [--alpha A] [--engine-only]
        [--before N] [--after N] [--set FIELD=VALUE ...] [--api messages|store]
        [--conversations 1,2,3] [--json]

By default through the public API on Redis (an embedded ``redis-server``, or
``BLACKBOARD_REDIS_URL``): each conversation is one agent's memory, each session written
with ``AgentMemory.add_messages`` (the library attaches the conversational context), each
question asked with ``AgentMemory.recall``. The bench builds no text of its own: the
caller's metadata is the turn's ``dia_id`` and an image's caption. ``--engine-only`` is
the fast path: the entries ``add_messages`` would write, straight into an in-process
:class:`SearchEngine`. ``--set`` overrides a :class:`ScoringConfig` field (ablations);
``--before``/``--after`` the turns of context (:class:`ConversationConfig`).

Through the stack every run is measured twice, and each figure says which it is: **at
once** (the questions asked right after the writes: whatever the model has not embedded
yet ranks by BM25 and the filters; ``pending`` is the mean count of the asked
conversation's turns still waiting for a vector, from each result's ``dense_pending``) and
**settled** (the same memory once every turn has its vector). Each is also reported on the
two halves of the dev split (conversations 1-3 and 4-5, ``HALVES``): a technique is kept
only where it gains on both. ``--api store`` writes each turn with a plain
``AgentMemory.store`` (one entry per turn in the episodic level, as ``add_messages``; no
conversation API, the caption in metadata).
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
#: A dialogue turn id; evidence strings are sometimes malformed ("D8:6; D9:17").
DIA = re.compile(r"D\d+:\d+")


#: The two-fold split of the dev conversations (1-based positions in the file).
HALVES = {"conversations 1-3": (0, 1, 2), "conversations 4-5": (3, 4)}


@dataclass(frozen=True, slots=True)
class Result:
    mode: str
    questions: int
    r5: float
    r10: float
    per_category: dict[str, tuple[int, float, float]]
    store_s: float
    query_ms_mean: float
    index_s: float = 0.0  # stack: first recall per agent (bootstrap), not in query
    query_ms_p50: float = 0.0
    #: "at once" (questions right after the writes) or "settled" (every turn embedded)
    state: str = "settled"
    #: per half of the split: (questions, R@5, R@10)
    halves: dict[str, tuple[int, float, float]] | None = None
    #: at once: mean turns of the asked conversation still without a vector per question
    pending_mean: float = 0.0
    #: settled: seconds from the end of the at-once questions until every turn had a vector
    settle_s: float = 0.0


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


def scored(qa: dict[str, Any]) -> tuple[int, set[str]] | None:
    """A question's category and evidence dia_ids when it is scored (categories 1-4, with
    evidence), else None."""
    cat = int(qa.get("category", 0))
    ev = set(DIA.findall(" ".join(map(str, qa.get("evidence", [])))))
    return (cat, ev) if cat in CATEGORIES and ev else None


def _questions(data: list[dict[str, Any]]) -> list[tuple[str, int, set[str], str]]:
    out = []
    for s in data:
        for qa in s["qa"]:
            if (got := scored(qa)) is not None:
                out.append((s["sample_id"], got[0], got[1], qa["question"]))
    return out


def _config(alpha: float | None, config: ScoringConfig | None) -> ScoringConfig:
    cfg = config or ScoringConfig()
    return replace(cfg, alpha=alpha) if alpha is not None else cfg


def load(conversations: list[int] | None = None, path: Path = DATA) -> list[dict[str, Any]]:
    """The conversations of a LoCoMo-format file, the dev split by default
    (``conversations``: 1-based positions, default all)."""
    data: list[dict[str, Any]] = json.loads(path.read_text())
    if conversations:
        bad = [c for c in conversations if not 1 <= c <= len(data)]
        if bad:
            raise SystemExit(f"--conversations: {bad} not in 1-{len(data)}")
        data = [data[c - 1] for c in conversations]
    return data


def run(
    mode: str, alpha: float | None = None, conv: ConversationConfig | None = None,
    config: ScoringConfig | None = None, engine_only: bool = False,
    redis_url: str | None = None, api: str = "messages",
    conversations: list[int] | None = None,
) -> list[Result]:
    conv = conv or ConversationConfig()
    if not engine_only:
        return asyncio.run(run_stack(mode, _config(alpha, config), conv, redis_url, api,
                                     conversations))
    data = load(conversations)
    embedder = MiniLMEmbedder() if mode == "hybrid" else None
    engine = SearchEngine(embedder, _config(alpha, config))
    t0 = time.perf_counter()
    for s in data:
        engine.add(engine_entries(s["sample_id"], s, conv))
    store_s = time.perf_counter() - t0
    per: list[Asked] = []
    times = []
    for sample, cat, ev, question in _questions(data):
        t = time.perf_counter()
        got = ask(engine, sample, question, 10, alpha)
        times.append(time.perf_counter() - t)
        per.append(_scored(sample, cat, ev, got, 0))
    return [summarise(f"{mode} (engine)", per, store_s, times, data=data)]


#: One question's outcome: (conversation, category, R@5, R@10, turns still unembedded).
Asked = tuple[str, int, float, float, int]


def _scored(sample: str, cat: int, ev: set[str], got: list[str], pending: int) -> Asked:
    return (sample, cat, len(ev & set(got[:5])) / len(ev), len(ev & set(got[:10])) / len(ev),
            pending)


async def _store_turns(mem: Any, sample: dict[str, Any], conv: ConversationConfig,
                       api: str) -> None:
    if api == "messages":
        mem.configure_conversation(conv)
        for session, msgs in sessions_of(sample):
            await mem.add_messages(session, msgs)
        return
    for _session, msgs in sessions_of(sample):  # one plain entry per turn, no context
        for m in msgs:
            # the level add_messages writes to (working memory keeps only 200 entries)
            await mem.store(f"{m.speaker}: {m.text}", level="episodic",
                            metadata=dict(m.metadata or {}))


async def _ask_all(mems: dict[str, Any], questions: list[tuple[str, int, set[str], str]]
                   ) -> tuple[list[Asked], list[float]]:
    per: list[Asked] = []
    times = []
    for sample, cat, ev, question in questions:
        t = time.perf_counter()
        hits = await mems[sample].recall(question, max_results=10)
        times.append(time.perf_counter() - t)
        got = [h.entry.metadata["dia_id"] for h in hits]
        per.append(_scored(sample, cat, ev, got, getattr(hits, "dense_pending", 0)))
    return per, times


async def run_stack(
    mode: str, cfg: ScoringConfig, conv: ConversationConfig, redis_url: str | None = None,
    api: str = "messages", conversations: list[int] | None = None,
) -> list[Result]:
    """The benchmark through Redis: ``AgentMemory.add_messages`` per session (or ``store``
    per turn), ``AgentMemory.recall`` per question; one Retriever (one process serving the
    five agents) shared by them. Asked at once, then again once settled."""
    import os
    from contextlib import ExitStack

    from blackboard import Blackboard, RedisServer
    from memory import AgentMemory
    from retrieval import Retriever

    data = load(conversations)
    questions = _questions(data)
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
                await _store_turns(mems[s["sample_id"]], s, conv, api)
            store_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            for mem in mems.values():  # first recall: bootstrap the index (no model wait)
                await mem.recall("warm up", max_results=1)
            index_s = time.perf_counter() - t0
            at_once, t_once = await _ask_all(mems, questions)
            t0 = time.perf_counter()
            retr.semantic_timeout = 3600.0
            for mem in mems.values():  # settle: the library's own wait for every vector
                await mem.recall(MemoryQuery(query="warm up", max_results=1,
                                             consistency="semantic"))
            settle_s = time.perf_counter() - t0
            settled, t_settled = await _ask_all(mems, questions)
            for mem in mems.values():
                await mem.aclose()
            await retr.aclose()
    name = f"{mode} ({'stack' if api == 'messages' else 'store'})"
    return [summarise(name, at_once, store_s, t_once, index_s, "at once", data),
            summarise(name, settled, store_s, t_settled, index_s, "settled", data, settle_s)]


def _means(rows: list[Asked]) -> tuple[int, float, float]:
    n = len(rows)
    return n, sum(r[2] for r in rows) / max(1, n), sum(r[3] for r in rows) / max(1, n)


def summarise(
    mode: str, per: list[Asked], store_s: float, times: list[float], index_s: float = 0.0,
    state: str = "settled", data: list[dict[str, Any]] | None = None, settle_s: float = 0.0,
) -> Result:
    """Mean recall overall, per category and per half of the split, from each question's
    (conversation, category, R@5, R@10, pending)."""
    qt = sum(times)
    by_cat: dict[int, list[Asked]] = defaultdict(list)
    for r in per:
        by_cat[r[1]].append(r)
    halves = None
    if data is not None:
        names = [s["sample_id"] for s in json.loads(DATA.read_text())]  # the split's order
        halves = {}
        for half, pos in HALVES.items():
            want = {names[i] for i in pos if i < len(names)}
            rows = [r for r in per if r[0] in want]
            if rows:
                halves[half] = _means(rows)
    n, r5, r10 = _means(per)
    return Result(
        mode, n, r5, r10,
        {CATEGORIES[c]: _means(rs) for c, rs in sorted(by_cat.items())},
        store_s,
        1000 * qt / max(1, n),
        index_s,
        1000 * float(sorted(times)[len(times) // 2]) if times else 0.0,
        state, halves,
        sum(r[4] for r in per) / max(1, n),
        settle_s,
    )


def _print(results: list[Result]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"LoCoMo dev evidence recall ({DATA.name})")
    for col in ("mode", "state", "category", "questions", "R@5", "R@10"):
        table.add_column(col, justify="right" if col in ("questions", "R@5", "R@10") else "left")
    for r in results:
        table.add_row(r.mode, r.state, "overall", str(r.questions), f"{r.r5:.3f}",
                      f"{r.r10:.3f}")
        for name, (n, r5, r10) in {**r.per_category, **(r.halves or {})}.items():
            table.add_row("", "", name, str(n), f"{r5:.3f}", f"{r10:.3f}")
    Console().print(table)
    for r in results:
        extra = (f", {r.pending_mean:.0f} turns of the conversation unembedded per question"
                 if r.state == "at once" else f", settled after {r.settle_s:.1f} s more")
        Console().print(
            f"{r.mode} {r.state}: store {r.store_s:.1f} s, index {r.index_s:.1f} s, "
            f"{r.query_ms_mean:.1f} ms/query (p50 {r.query_ms_p50:.1f}){extra}",
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
    ap.add_argument("--api", choices=("messages", "store"), default="messages",
                    help="write turns with add_messages (default) or one plain store each")
    ap.add_argument("--conversations", default=None,
                    help="comma-separated 1-based positions of the dev conversations")
    a = ap.parse_args(argv)
    try:
        convs = [int(x) for x in a.conversations.split(",")] if a.conversations else None
    except ValueError:
        raise SystemExit(f"--conversations {a.conversations!r}: expected e.g. 1,2,3") from None
    modes = ("bm25", "hybrid") if a.mode == "both" else (a.mode,)
    d = ConversationConfig()
    conv = replace(d, before=d.before if a.before is None else a.before,
                   after=d.after if a.after is None else a.after)
    cfg = _overrides(a.set)
    results = [r for m in modes
               for r in run(m, a.alpha, conv, cfg, engine_only=a.engine_only,
                            redis_url=a.redis_url, api=a.api, conversations=convs)]
    if a.json:
        print(json.dumps([asdict(r) for r in results], indent=2))
    else:
        _print(results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
