"""The figures of ``bench/consolidation_quality.py``, from a settled run (:mod:`bench.cq_run`).

Provenance: a derived entry's ``metadata["provenance"]["sources"]`` are the entries it
was made from; followed transitively (a belief from stm copies of working turns) they
end at the turns written, whose dia_ids the run kept. An entry *reaches* the turns at the
ends of its chains.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from bench.cq_run import Stored
from bench.locomo import CATEGORIES, DIA, scored
from bench.rouge import rouge_l
from blackboard import Entry
from memory import MemoryLevel

#: MiniLM cosine at or above which a belief states a gold observation (lenient match);
#: paraphrases of one fact score about 0.6-0.8 with this model, unrelated facts of the same
#: people 0.2-0.5.
OBSERVATION_COSINE = 0.6
_SESSION = re.compile(r"D(\d+):")
Embed = Callable[[list[str]], np.ndarray]


def _sources(e: Entry) -> list[str]:
    prov = e.metadata.get("provenance") or {}
    return list(prov.get("sources") or ()) if isinstance(prov, dict) else []


def reacher(s: Stored) -> Callable[[str], frozenset[str]]:
    """entry id -> the dia_ids its provenance chains reach (memoised; a cycle reaches
    nothing more)."""
    sources = {e.id: _sources(e) for es in s.levels.values() for e in es}
    memo: dict[str, frozenset[str]] = {}

    def turns(i: str) -> frozenset[str]:
        if i in s.dia_of:
            return frozenset({s.dia_of[i]})
        if i not in memo:
            memo[i] = frozenset()  # cycle guard
            memo[i] = frozenset().union(*(turns(x) for x in sources.get(i, ())))
        return memo[i]

    return turns


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _mean(xs: Iterable[float]) -> float | None:
    ys = list(xs)
    return sum(ys) / len(ys) if ys else None


def summaries(stored: list[Stored], embed: Embed) -> dict[str, Any]:
    """ROUGE-L F1 and embedding cosine of our summaries of each session against its gold
    ``session_<n>_summary``. Ours for session n: the stm summaries (tag ``summary``) whose
    provenance reaches a turn of session n, concatenated oldest first (a summary of a batch
    spanning two sessions counts for both); a session with none scores 0."""
    pairs: list[tuple[str, str]] = []
    missing = 0
    for s in stored:
        gold = s.sample.get("session_summary") or {}
        turns = reacher(s)
        ours: dict[int, list[Entry]] = defaultdict(list)
        for e in s.levels[MemoryLevel.STM]:
            if "summary" in e.tags:
                for n in {int(m.group(1)) for d in turns(e.id) if (m := _SESSION.match(d))}:
                    ours[n].append(e)
        for key, text in gold.items():
            m = re.fullmatch(r"session_(\d+)_summary", key)
            if not m or not str(text).strip():
                continue
            es = sorted(ours.get(int(m.group(1)), []), key=lambda e: e.created_at)
            missing += not es
            pairs.append((" ".join(e.text for e in es), str(text)))
    if not pairs:
        return {"sessions": 0, "rouge_l": None, "cosine": None, "without_summary": 0}
    ours_v = _unit(embed([p[0] or " " for p in pairs]))
    gold_v = _unit(embed([p[1] for p in pairs]))
    cos = [float(a @ b) if p[0] else 0.0 for a, b, p in zip(ours_v, gold_v, pairs, strict=True)]
    return {"sessions": len(pairs), "rouge_l": _mean(rouge_l(a, b) for a, b in pairs),
            "cosine": _mean(cos), "without_summary": missing}


def _observations(sample: dict[str, Any]) -> list[tuple[str, set[str]]]:
    """(text, dia_ids) of every gold observation; a malformed one is skipped."""
    out = []
    for per_speaker in (sample.get("observation") or {}).values():
        for items in (per_speaker or {}).values():
            for item in items or ():
                if isinstance(item, list | tuple) and item and isinstance(item[0], str):
                    out.append((item[0], set(DIA.findall(" ".join(map(str, item[1:]))))))
    return out


def coverage(stored: list[Stored], embed: Embed) -> dict[str, Any]:
    """Share of gold observations matched by a live semantic belief of the conversation:
    ``provenance``: some belief reaches one of the observation's turns; ``similar``: some
    belief's cosine with it is >= :data:`OBSERVATION_COSINE`; ``strict``: one belief does
    both (the same fact, drawn from the same turn)."""
    n = prov = sim = strict = 0
    for s in stored:
        obs = _observations(s.sample)
        beliefs = [e for e in s.levels[MemoryLevel.SEMANTIC] if not e.superseded_by]
        n += len(obs)
        if not obs or not beliefs:
            continue
        turns = reacher(s)
        reach = [turns(b.id) for b in beliefs]
        cos = _unit(embed([o[0] for o in obs])) @ _unit(embed([b.text for b in beliefs])).T
        for (_text, ids), row in zip(obs, cos, strict=True):
            from_turn = np.array([bool(ids & r) for r in reach])
            close = row >= OBSERVATION_COSINE
            prov += bool(from_turn.any())
            sim += bool(close.any())
            strict += bool((from_turn & close).any())
    if not n:
        return {"observations": 0, "provenance": None, "similar": None, "strict": None}
    return {"observations": n, "provenance": prov / n, "similar": sim / n, "strict": strict / n,
            "beliefs": sum(len([e for e in s.levels[MemoryLevel.SEMANTIC]
                                if not e.superseded_by]) for s in stored)}


#: One question's outcome: (sample position, category, R@5, R@10, turns reached by top 10).
Asked = tuple[int, int, float, float, int]


def long_term_recall(stored: list[Stored], positions: list[int]) -> list[Asked]:
    """Per scored question: the share of its evidence turns reached by the provenance of
    the top 5 / top 10 hits of the consolidated levels."""
    out: list[Asked] = []
    for s, pos in zip(stored, positions, strict=True):
        turns = reacher(s)
        for qa, hits in zip(s.sample.get("qa", []), s.hits, strict=True):
            if (got := scored(qa)) is None:
                continue
            cat, ev = got
            r5 = frozenset().union(*(turns(h.id) for h in hits[:5]))
            r10 = frozenset().union(*(turns(h.id) for h in hits[:10]))
            out.append((pos, cat, len(ev & r5) / len(ev), len(ev & r10) / len(ev), len(r10)))
    return out


def recall_table(rows: list[Asked], halves: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """Mean R@5, R@10 (and turns reached) overall, per category and per half."""
    def means(rs: list[Asked]) -> dict[str, Any]:
        n = len(rs)
        return {"questions": n, "r5": _mean(r[2] for r in rs), "r10": _mean(r[3] for r in rs),
                "turns_reached": _mean(r[4] for r in rs)} if n else {"questions": 0}

    out = {"overall": means(rows)}
    for c, name in CATEGORIES.items():
        out[name] = means([r for r in rows if r[1] == c])
    for name, pos in halves.items():
        if any(r[0] in pos for r in rows):
            out[name] = means([r for r in rows if r[0] in pos])
    return out


def level_counts(stored: list[Stored]) -> dict[str, int]:
    """Entries per consolidated level, summed over conversations (stm: summaries apart)."""
    out: dict[str, int] = defaultdict(int)
    for s in stored:
        for lv, es in s.levels.items():
            out[lv.value] += len(es)
            if lv is MemoryLevel.STM:
                out["stm summaries"] += sum("summary" in e.tags for e in es)
    return dict(out)
