"""Prompt-ready context on LoCoMo-format conversations (issue 27 item 3): for each question
of categories 1-4, ``AgentMemory.context(question, budget_tokens=B)`` over the
conversation's memory, at budgets 500 to 4,000 tokens; reports the share of questions
whose context stays within its budget (must be all), cites an evidence turn (any of the
question's; and all of them), and the p50 / p99 time of one ``context`` call.

    .venv/bin/python bench/context.py [--data PATH] [--budgets 500,1000,...]
                                      [--conversations 1,2] [--json]

Each conversation is one agent's memory, written through ``AgentMemory.add_messages`` (as
``bench/locomo.py`` does), then **settled**: every turn has its vector before the first
question (``consistency="semantic"``), so the figures are the memory's, not the model's
pace. A citation is an entry of the context's ``citations``; it cites a turn when its
``dia_id`` is that turn's. Starts an embedded redis-server unless
``BLACKBOARD_REDIS_URL`` is set. Progress on stderr; the report (or ``--json``) on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.append(str(Path(__file__).resolve().parent))

from locomo import CATEGORIES, DATA, sessions_of  # noqa: E402
from locomo import load as locomo_load  # noqa: E402

from blackboard import Blackboard, RedisServer  # noqa: E402
from memory import AgentMemory, MemoryQuery  # noqa: E402
from retrieval.completeness import EmbeddingBacklog  # noqa: E402

BUDGETS = (500, 1000, 1500, 2000, 3000, 4000)
_DIA = re.compile(r"D\d+:\d+")

Question = tuple[str, int, set[str], str]


class BadInput(Exception):
    """An argument or data file the bench cannot use (one line, exit 2)."""


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def questions(data: list[dict[str, Any]]) -> list[Question]:
    """(conversation, category, evidence turn ids, question) of categories 1-4."""
    out = []
    for s in data:
        for qa in s.get("qa", []):
            cat = int(qa.get("category", 0))
            ev = set(_DIA.findall(" ".join(map(str, qa.get("evidence", [])))))
            if cat in CATEGORIES and ev:
                out.append((s["sample_id"], cat, ev, qa["question"]))
    return out


def load(path: Path, picks: list[int] | None) -> list[dict[str, Any]]:
    """The conversations of ``path`` (:func:`locomo.load`), a bad file in one line."""
    try:
        data = locomo_load(picks, path)
    except (OSError, ValueError) as exc:
        raise BadInput(f"--data {path}: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(s, dict) for s in data):
        raise BadInput(f"--data {path}: not a list of LoCoMo conversations")
    return data


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))] if s else float("nan")


async def measure(url: str, data: list[dict[str, Any]], budgets: list[int]) -> dict[str, Any]:
    run = str(int(time.time()))
    qs = questions(data)
    rows: dict[int, dict[str, Any]] = {b: {"within": 0, "any": 0, "all": 0, "tokens": [],
                                           "times": []} for b in budgets}
    async with Blackboard.connect(url) as bb:
        mems = {s["sample_id"]: AgentMemory(bb, f"{s['sample_id']}-{run}") for s in data}
        for i, s in enumerate(data, 1):
            say(f"storing conversation {i}/{len(data)} ...")
            for session, msgs in sessions_of(s):
                await mems[s["sample_id"]].add_messages(session, msgs)
        say("settling (every turn embedded) ...")
        t0 = time.perf_counter()
        for mem in mems.values():
            while True:  # the library's own wait, 30 s at a time, until every vector is in
                try:
                    await mem.recall(MemoryQuery(query="warm up", max_results=1,
                                                 consistency="semantic"))
                    break
                except EmbeddingBacklog as exc:
                    say(f"  {exc.args[0] if exc.args else exc}"[:78])
        settle_s = time.perf_counter() - t0
        for b in budgets:
            say(f"{len(qs)} questions at {b} tokens ...")
            r = rows[b]
            for sample, _cat, ev, q in qs:
                t = time.perf_counter()
                c = await mems[sample].context(q, budget_tokens=b)
                r["times"].append(time.perf_counter() - t)
                r["tokens"].append(c.tokens)
                cited = {e.metadata.get("dia_id") for e in c.citations.values()}
                r["within"] += c.tokens <= b
                r["any"] += bool(ev & cited)
                r["all"] += ev <= cited
        for mem in mems.values():
            await mem.aclose()
    n = len(qs)
    return {"conversations": len(data), "questions": n, "state": "settled",
            "settle_s": round(settle_s, 1), "budgets": {
                str(b): {"within_budget": r["within"] / n, "evidence_cited": r["any"] / n,
                         "all_evidence_cited": r["all"] / n,
                         "tokens_p50": pct(r["tokens"], 50),
                         "p50_ms": round(pct(r["times"], 50) * 1e3, 2),
                         "p99_ms": round(pct(r["times"], 99) * 1e3, 2)}
                for b, r in rows.items()}}


def report(r: dict[str, Any]) -> str:
    lines = [f"context on {r['conversations']} conversations, {r['questions']} questions "
             f"(settled after {r['settle_s']:g} s)", "",
             f"{'budget':>7}{'within':>8}{'cited':>7}{'all':>6}{'tokens':>8}"
             f"{'p50 ms':>8}{'p99 ms':>8}"]
    for b, x in r["budgets"].items():
        lines.append(f"{b:>7}{x['within_budget']:>8.3f}{x['evidence_cited']:>7.3f}"
                     f"{x['all_evidence_cited']:>6.3f}{x['tokens_p50']:>8.0f}"
                     f"{x['p50_ms']:>8.1f}{x['p99_ms']:>8.1f}")
    lines += ["", "within: share of contexts within budget; cited: an evidence turn is "
              "cited;", "all: every evidence turn is; tokens: p50 of the text's estimate"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    ap.add_argument("--conversations", default="")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    try:
        budgets = [int(x) for x in a.budgets.split(",") if x]
        picks = [int(x) for x in a.conversations.split(",") if x]
    except ValueError as exc:
        ap.exit(2, f"bench/context.py: {exc}\n")
    try:
        data = load(a.data, picks)
    except (BadInput, SystemExit) as exc:  # locomo.load exits on a bad --conversations
        ap.exit(2, f"bench/context.py: {exc}\n")
    with ExitStack() as stack:
        url = os.environ.get("BLACKBOARD_REDIS_URL") or stack.enter_context(
            RedisServer(appendfsync="no")).url
        res = asyncio.run(measure(url, data, budgets))
    print(json.dumps(res) if a.json else report(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
