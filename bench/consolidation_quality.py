"""Consolidation quality on LoCoMo-format conversations (issue 26 item 7).

    python bench/consolidation_quality.py [--data PATH] [--conversations 1,2,3] [--json]
        [--llm-url URL --llm-model M] [--bm25] [--redis-url URL]

Each conversation is one agent: its sessions are written to working memory with
``add_messages`` and the default edges consolidate them in in-process workers (identity
and summaries into stm, episodes, beliefs and procedures into the long-term levels),
settled after every session (:mod:`bench.cq_run`). Every figure is of the **settled**
state. Then (:mod:`bench.cq_metrics`):

* summaries: ROUGE-L F1 (:mod:`bench.rouge`) and MiniLM cosine of our summaries of a
  session against its gold ``session_<n>_summary``; ours = the stm summaries whose
  provenance reaches a turn of that session, concatenated oldest first;
* observations: the share of gold observations matched by a semantic belief, by
  provenance (the belief reaches the observation's turn), by similarity (cosine >= 0.6)
  and strictly (one belief, both);
* long-term-only evidence R@5 / R@10: each question of categories 1-4 with evidence is
  asked by recall over stm, ltm:episodic, ltm:semantic and ltm:procedural without the raw
  turns (stm's identity copies of the messages, deleted first, as their expiry would, so
  the consolidated entries rank among themselves); an evidence turn is found when the
  provenance of a top-k hit reaches it. Also per category and per half of the dev split
  (conversations 1-3 and 4-5 by position in the file).

Recall is hybrid (BM25 + MiniLM, every entry embedded first); ``--bm25`` ranks by BM25
alone and skips embedding the levels (minutes instead of twenty on the dev split).
A file without ``session_summary`` or ``observation`` reports those as n/a. The LLM path
of the transformers takes any OpenAI-compatible endpoint (``--llm-url``, ``--llm-model``).
Redis: ``--redis-url``, ``BLACKBOARD_REDIS_URL``, or an embedded ``redis-server``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import cq_metrics as metrics
from bench.cq_run import FAST, LEVELS, K, run, say
from bench.locomo import DATA, HALVES, load


def _data(path: Path, conversations: str | None) -> tuple[list[dict[str, Any]], list[int]]:
    """The chosen conversations and their 0-based positions in the file; a bad path or
    file is a one-line error (exit 2)."""
    try:
        convs = [int(x) for x in conversations.split(",")] if conversations else None
    except ValueError:
        raise SystemExit(f"--conversations {conversations!r}: expected e.g. 1,2,3") from None
    try:
        data = load(convs, path)
    except (OSError, ValueError) as exc:
        print(f"consolidation_quality: cannot read {path}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    if not isinstance(data, list) or not all(isinstance(s, dict) and "conversation" in s
                                             for s in data):
        print(f"consolidation_quality: {path} is not LoCoMo format (a list of samples with "
              "'conversation')", file=sys.stderr)
        raise SystemExit(2)
    return data, [c - 1 for c in convs] if convs else list(range(len(data)))


def measure(data: list[dict[str, Any]], positions: list[int], url: str,
            llm: tuple[str, str] | None, bm25: bool = False) -> dict[str, Any]:
    from retrieval.embedders import MiniLMEmbedder

    settings = FAST
    if llm:
        settings = dataclasses.replace(FAST, llm_base_url=llm[0], llm_model=llm[1])
    embedder = MiniLMEmbedder()
    t0 = time.perf_counter()
    import blackboard

    say(f"code under test: {Path(blackboard.__file__).resolve().parents[1]}")
    say(f"storing and consolidating {len(data)} conversations (settled after each session)")
    stored = asyncio.run(run(url, data, settings, None if bm25 else embedder))
    run_s = time.perf_counter() - t0
    say("scoring")

    def embed(texts: list[str]) -> Any:
        return embedder.embed(texts)

    return {
        "state": "settled",
        "conversations": [s["sample_id"] for s in data],
        "llm": f"{llm[1]} at {llm[0]}" if llm else None,
        "levels": metrics.level_counts(stored),
        "summaries": metrics.summaries(stored, embed),
        "observations": metrics.coverage(stored, embed),
        "long_term_recall": metrics.recall_table(metrics.long_term_recall(stored, positions),
                                                 HALVES),
        "recall": "bm25" if bm25 else "hybrid",
        "k": K,
        "searched_levels": [lv.value for lv in LEVELS],
        "seconds": {"store_and_consolidate": run_s, "total": time.perf_counter() - t0},
    }


def _f(x: Any) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def report(r: dict[str, Any], source: Path) -> None:
    """The figures at 80 columns."""
    print(f"Consolidation quality, {source.name}: {len(r['conversations'])} conversations, "
          f"state: {r['state']}")
    print(f"transformers: {'LLM ' + r['llm'] if r['llm'] else 'LLM-free'}")
    print("entries: " + ", ".join(f"{k} {v}" for k, v in r["levels"].items()))
    s = r["summaries"]
    print(f"summaries vs gold ({s['sessions']} sessions, {s['without_summary']} without one):")
    print(f"  ROUGE-L F1 {_f(s['rouge_l'])}, cosine {_f(s['cosine'])}")
    o = r["observations"]
    print(f"gold observations matched by a belief ({o['observations']}):")
    print(f"  by provenance {_f(o['provenance'])}, by similarity {_f(o['similar'])}, "
          f"strict (both) {_f(o['strict'])}")
    print(f"long-term-only evidence recall, {r['recall']} (a hit finds the turns its")
    print("provenance reaches)")
    print(f"  levels searched: {', '.join(r['searched_levels'])}, raw turns left out")
    print(f"  {'':20} {'questions':>9} {'R@5':>7} {'R@10':>7} {'turns in top 10':>16}")
    for name, row in r["long_term_recall"].items():
        if row["questions"]:
            print(f"  {name:20} {row['questions']:>9} {_f(row['r5']):>7} "
                  f"{_f(row['r10']):>7} {row['turns_reached']:>16.1f}")
    sec = r["seconds"]
    print(f"time: {sec['store_and_consolidate']:.0f} s to store and consolidate, "
          f"{sec['total']:.0f} s in all")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--data", type=Path, default=DATA, help="a LoCoMo-format JSON file")
    ap.add_argument("--conversations", default=None, help="1-based positions, e.g. 1,2,3")
    ap.add_argument("--json", action="store_true", help="print JSON for programs")
    ap.add_argument("--llm-url", default=None, help="OpenAI-compatible base URL")
    ap.add_argument("--llm-model", default=None, help="the model name at --llm-url")
    ap.add_argument("--bm25", action="store_true",
                    help="recall by BM25 alone (no embedding of the levels: minutes faster)")
    ap.add_argument("--redis-url", default=None, help="default: $BLACKBOARD_REDIS_URL or embedded")
    a = ap.parse_args(argv)
    if (a.llm_url is None) != (a.llm_model is None):
        ap.error("give --llm-url and --llm-model together")
    data, positions = _data(a.data, a.conversations)
    from workers.embedded import redis_or_embedded

    llm = (a.llm_url, a.llm_model) if a.llm_url else None
    with redis_or_embedded(a.redis_url, appendfsync="no") as url:
        r = measure(data, positions, url, llm, a.bm25)
    if a.json:
        print(json.dumps(r, indent=2))
    else:
        report(r, a.data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
