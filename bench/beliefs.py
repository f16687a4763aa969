"""Current truth first on updated facts (issue 25): does recall put the current value first?

The data: the LoCoMo dev split's conversations (``/work/shared/bench/locomo``), into which
scripted updates are inserted: for each speaker and each slot kind (where they live, how
many pets they have, what they prefer, their favourite thing, where they work) a first
statement in an early session and a changed one in a late session, each phrased by one of
several templates (seeded). A case asks the slot's question (``Where does Ana live?``).

* raw: every turn (and the inserted ones) is a message entry of the conversation's scope,
  as ``add_messages`` writes them; current-first = the update ranks above the first
  statement in the top 10 (or is there alone).
* beliefs: the semantic transformer consolidates the turns in batches of 12, in order, as
  the stm -> ltm:semantic edge does, each batch's drafts written as the dataflow bridge
  and the write script would (``existing`` per key; supersession marks the replaced
  entry; with the new code it is retired compare-and-set); current-first = the first
  belief hit naming either value names the updated one. Only slots the extractor reads
  (live in, has <count>, prefers) are belief cases.

"landed" is the code before issue 25, measured in the same run: the raw ranking as
``engine.search`` returns it; the beliefs by the landed transformer, run in a child
process on ``git archive <base>`` of ``consolidation/``. "new" is this tree's recall path
(:mod:`retrieval.truth`, :mod:`retrieval.updates`). Halves: conversations 0, 2, 4 and 1, 3
(an idea stays only if it gains on both).

    .venv/bin/python -m bench.beliefs [--base COMMIT] [--bm25] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import inspect
import json
import os
import random
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.locomo import DATA, sessions_of
from blackboard import Entry
from memory.conversation import ConversationConfig, Message, message_requests
from retrieval import MemoryQuery, SearchEngine

ROOT = Path(__file__).resolve().parent.parent
BASE = "225f757"  # the code before issue 25
K = 10
BATCH = 12

#: slot kind -> (first phrasings, update phrasings, question, values, belief case?)
SLOTS: dict[str, tuple[list[str], list[str], str, list[str], bool]] = {
    "home": (["I live in {v}.", "These days I live in {v}.", "We live in {v}."],
             ["I now live in {v}.", "We live in {v} now.", "I actually live in {v} now."],
             "Where does {s} live?",
             ["Boston", "Denver", "Lisbon", "Austin", "Portland", "Chicago", "Seattle"], True),
    "pets": (["I have {n} {v}.", "We have {n} {v} at home."],
             ["I have {m} {v} now.", "We now have {m} {v}."],
             "How many {v} does {s} have?", ["cats", "dogs", "rabbits", "turtles"], True),
    "prefers": (["I prefer {v}.", "I prefer {v} in the mornings."],
                ["I now prefer {v}.", "I prefer {v} these days."],
                "What does {s} prefer to drink?", ["tea", "coffee", "cocoa", "lemonade"], True),
    "favourite": (["My favourite band is {v}.", "My favourite band is {v}, no doubt."],
                  ["My favourite band is {v} now.", "Lately my favourite band is {v}."],
                  "What is {s}'s favourite band?",
                  ["Coldplay", "Radiohead", "Muse", "Queen", "Oasis"], False),
    "work": (["I work at {v}.", "I work at {v} these days."],
             ["I work at {v} now.", "I now work at {v}."],
             "Where does {s} work?", ["Initech", "Globex", "Umbrella", "Hooli"], False),
}


@dataclass(frozen=True, slots=True)
class Case:
    sample: str
    half: int
    kind: str
    speaker: str
    question: str
    first: str  # dia_id of the first statement
    update: str  # dia_id of the update
    old_value: str
    new_value: str
    belief: bool


def _values(kind: str, rnd: random.Random) -> tuple[dict[str, Any], dict[str, Any], str, str]:
    vals = SLOTS[kind][3]
    if kind == "pets":
        v = rnd.choice(vals)
        n = rnd.randint(1, 3)
        m = n + rnd.randint(1, 2)
        return {"v": v, "n": n}, {"v": v, "m": m}, f"{n} {v}", f"{m} {v}"
    a, b = rnd.sample(vals, 2)
    return {"v": a}, {"v": b}, a, b


def build(data: list[dict[str, Any]], seed: int = 25) -> tuple[dict[str, list[Any]], list[Case]]:
    """Each conversation's sessions with the scripted statements inserted, and the cases."""
    rnd = random.Random(seed)
    convs: dict[str, list[Any]] = {}
    cases = []
    for idx, s in enumerate(data):
        sessions = [(name, list(msgs)) for name, msgs in sessions_of(s)]
        speakers = [s["conversation"]["speaker_a"], s["conversation"]["speaker_b"]]
        n = len(sessions)
        u = 0
        for speaker in speakers:
            for kind, (firsts, updates, question, _, is_belief) in SLOTS.items():
                a, b, old, new = _values(kind, rnd)
                ids = []
                for lo, hi, forms, fill in ((0.1, 0.4, firsts, a), (0.6, 0.95, updates, b)):
                    si = min(n - 1, int(n * rnd.uniform(lo, hi)))
                    msgs = sessions[si][1]
                    pos = rnd.randint(1, max(1, len(msgs) - 1))
                    u += 1
                    dia = f"U{u}"
                    prev = msgs[pos - 1].at
                    at = prev + timedelta(milliseconds=500) if prev is not None else None
                    msgs.insert(pos, Message(speaker, rnd.choice(forms).format(**fill), at,
                                             {"dia_id": dia}))
                    ids.append(dia)
                q = question.format(s=speaker, v=a.get("v", ""))
                cases.append(Case(s["sample_id"], idx % 2, kind, speaker, q, ids[0], ids[1],
                                  old, new, is_belief))
        convs[s["sample_id"]] = sessions
    return convs, cases


def entries(scope: str, sessions: list[Any]) -> list[Entry]:
    """The message entries ``add_messages`` would write (``created_at``: the message time;
    one batch per session, so inserted turns get context like the others)."""
    cfg = ConversationConfig()
    out = []
    for name, msgs in sessions:
        # times stay increasing within a session after the insertions
        for i in range(1, len(msgs)):
            if msgs[i].at is not None and msgs[i - 1].at is not None and msgs[i].at <= msgs[
                    i - 1].at:
                msgs[i] = dataclasses.replace(msgs[i], at=msgs[i - 1].at + timedelta(
                    milliseconds=1))
        for m, req in zip(msgs, message_requests(name, msgs, 0, cfg), strict=True):
            at = int(m.at.timestamp() * 1000)
            out.append(Entry(id=f"{scope}-m{len(out)}".replace(":", "-"), scope=scope,
                             value=req.value,
                             tags=frozenset(req.tags or ()), metadata=dict(req.metadata or {}),
                             created_at=at, updated_at=at, strength_at=at))
    return out


def _embedder(bm25: bool) -> Any:
    if bm25:
        return None
    from retrieval.embedders import MiniLMEmbedder

    return MiniLMEmbedder()


def _new_recall(engine: SearchEngine, q: MemoryQuery, scope: str, now: int) -> list[Any]:
    """What ``Retriever._search`` does with this tree's code (no copies in these scopes)."""
    from retrieval.truth import current_truth, truth_filter
    from retrieval.updates import latest_first, pull_updates

    q = truth_filter(q)
    hits = current_truth(engine.search(q, [scope], now, depth=q.max_results * 2), q, now)
    return latest_first(pull_updates(hits, engine.newest_on_slot))[: q.max_results]


def _recall(engine: SearchEngine, question: str, scope: str, now: int, new: bool) -> list[Any]:
    q = MemoryQuery(query=question, max_results=K)
    if new:
        return _new_recall(engine, q, scope, now)
    return engine.search(q, [scope], now)


def raw_first(convs: dict[str, list[Any]], cases: list[Case], bm25: bool) -> dict[str, Any]:
    """Raw messages: per case, whether the update ranks above the first statement."""
    engine = SearchEngine(_embedder(bm25))
    now = {}
    for sample, sessions in convs.items():
        es = entries(sample, sessions)
        engine.add(es)
        now[sample] = max(e.created_at for e in es)
    out: dict[str, list[bool]] = {"landed": [], "new": []}
    for c in cases:
        for mode in out:
            hits = _recall(engine, c.question, c.sample, now[c.sample], mode == "new")
            got = [h.entry.metadata.get("dia_id") for h in hits]
            ok = c.update in got and (c.first not in got or got.index(c.update) < got.index(
                c.first))
            out[mode].append(ok)
    return out


async def consolidate(scope: str, es: list[Entry]) -> list[Entry]:
    """The beliefs the semantic edge leaves in ``scope`` after ``es`` (batches of
    :data:`BATCH`, in order), written as the bridge and the write script would."""
    from consolidation import TransformContext, get_transformer
    from workers.transform import draft_request

    t = get_transformer("semantic")
    new_api = "old" in inspect.signature(draft_request).parameters
    store: dict[str, Entry] = {}
    holder: dict[str, str] = {}
    for i in range(0, len(es), BATCH):
        batch = es[i:i + BATCH]
        now = max(e.created_at for e in batch)
        ctx = TransformContext("bench-sem", scope, now_ms=now)
        drafts = await t(batch, ctx)
        keys = {d.key for d in drafts if d.key}
        existing = {k: store[holder[k]] for k in keys if k in holder}
        if existing:
            drafts = await t(batch, dataclasses.replace(ctx, existing=existing))
        for d in drafts:
            old = store.get(holder.get(d.key or "", ""))
            req = (draft_request(d, "bench-sem", scope, old, now) if new_api
                   else draft_request(d, "bench-sem", scope))
            e = Entry(id=str(req.entry_id), scope=scope, value=req.value,
                      tags=frozenset(req.tags or ()), metadata=dict(req.metadata or {}),
                      key=req.key, created_at=now, updated_at=now, strength_at=now)
            if req.entry_id in store:
                continue  # a replay: the write script changes nothing
            if old is not None:
                retire = getattr(req, "retire", None)
                store[old.id] = dataclasses.replace(
                    old, superseded_by=e.id, tags=old.tags | {"superseded"},
                    metadata=dict(retire.metadata) if retire else old.metadata,
                    value=retire.value if retire and retire.value is not None else old.value)
            store[e.id] = e
            if d.key:
                holder[d.key] = e.id
    return list(store.values())


def belief_first(convs: dict[str, list[Any]], cases: list[Case], bm25: bool,
                 new: bool) -> list[bool | None]:
    """Beliefs: per belief case, whether the first belief hit naming either value names the
    update (None: not a belief case)."""
    engine = SearchEngine(_embedder(bm25))
    now = {}
    for sample, sessions in convs.items():
        es = entries(sample, sessions)
        scope = f"{sample}:sem"
        engine.add(asyncio.run(consolidate(scope, es)))
        now[sample] = max(e.created_at for e in es)
    out: list[bool | None] = []
    for c in cases:
        if not c.belief:
            out.append(None)
            continue
        hits = _recall(engine, c.question, f"{c.sample}:sem", now[c.sample], new)
        ok = False
        for h in hits:
            text = h.entry.text.casefold()
            said_new, said_old = c.new_value.casefold() in text, c.old_value.casefold() in text
            about = c.speaker.casefold() in text or text.startswith("i ")
            if about and (said_new or said_old):
                ok = said_new and not said_old
                break
        out.append(ok)
    return out


def _landed_beliefs(base: str, bm25: bool) -> list[bool | None]:
    """The belief cases under the landed consolidation code, in a child process."""
    with tempfile.TemporaryDirectory(prefix="bench-beliefs-") as tmp:
        arch = subprocess.run(["git", "-C", str(ROOT), "archive", base, "consolidation",
                               "workers/transform.py"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", tmp], input=arch.stdout, check=True)
        # the landed consolidation package and bridge; everything else from this tree
        (Path(tmp) / "workers").rename(Path(tmp) / "landed_workers")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([tmp, str(ROOT)])}
        args = [sys.executable, "-m", "bench.beliefs", "--child", "--base", base]
        r = subprocess.run(args + (["--bm25"] if bm25 else []), env=env, cwd=tmp,
                           capture_output=True, text=True, check=True)
        return list(json.loads(r.stdout.strip().splitlines()[-1]))


def _rate(xs: list[bool | None]) -> tuple[int, float]:
    ys = [x for x in xs if x is not None]
    return len(ys), (sum(ys) / len(ys) if ys else 0.0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=BASE, help="the landed commit measured against")
    ap.add_argument("--bm25", action="store_true", help="BM25 only (no MiniLM)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    data = json.loads(DATA.read_text())
    convs, cases = build(data)
    if a.child:  # landed consolidation (see _landed_beliefs): beliefs ranked as it did
        import importlib

        sys.modules["workers.transform"] = importlib.import_module("landed_workers.transform")
        print(json.dumps(belief_first(convs, cases, a.bm25, new=False)))
        return 0
    raw = raw_first(convs, cases, a.bm25)
    convs, cases = build(data)  # fresh copies (entries() adjusts times in place)
    beliefs = {"landed": _landed_beliefs(a.base, a.bm25),
               "new": belief_first(convs, cases, a.bm25, new=True)}
    report: dict[str, Any] = {"cases": len(cases), "k": K,
                              "mode": "bm25" if a.bm25 else "hybrid"}
    for name, res in (("raw", raw), ("beliefs", beliefs)):
        for mode, xs in res.items():
            per = {"all": _rate(list(xs))}
            for half in (0, 1):
                per[f"half{half}"] = _rate([x for x, c in zip(xs, cases, strict=True)
                                            if c.half == half])
            report[f"{name}_{mode}"] = per
    if a.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"current-first on updated facts ({len(cases)} cases, top {K}, {report['mode']}; "
          "halves: conversations 0,2,4 | 1,3)")
    for name in ("raw", "beliefs"):
        for mode in ("landed", "new"):
            per = report[f"{name}_{mode}"]
            cells = "  ".join(f"{k} {v[1]:.3f} (n={v[0]})" for k, v in per.items())
            print(f"  {name:8} {mode:7} {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
