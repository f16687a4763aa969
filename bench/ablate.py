"""Each ranking technique on and off, on two data sets, per half: a technique stays only
where it gains on both halves of both (issue 31 item 3).

    python -m bench.ablate [--data locomo,longchat] [--only NAME,...] [--json]

Data sets: the LoCoMo dev split (halves: conversations 1-3 / 4-5) and ``bench.longchat``
(generated here: long user-assistant conversations, long answers, updated facts; halves
1-3 / 4-6). Every run is the in-process engine on the entries ``add_messages`` writes
(``bench/locomo.py --engine-only``: the same values, context and ranking as through Redis
once every turn has its vector, i.e. *settled*), asked each scored question, evidence
recall@10 (and @5) per half. The baseline row is bm25s alone on the same messages
(``speaker: text``, English stop words, Snowball stemmer; the shared README's row).

For each technique the full pipeline is run with that technique off; the delta is
(on - off), per half; the verdict is "gains on both" when both halves gain, "neutral"
when neither moves by 0.002, else "not on both". Vectors are cached by text per embedder
variant (in ``--cache``, default a file under /tmp), so only runs that change the indexed
text (context glue, long-text handling) pay the model again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np

from bench import longchat
from bench.locomo import _questions, _scored, ask, engine_entries, load
from memory.conversation import ConversationConfig
from retrieval import ScoringConfig, SearchEngine
from retrieval.embedders import MiniLMEmbedder

CACHE = Path("/tmp/rb-ablate-vectors.pkl")
#: name -> (conversations of the first half, of the second) by position
HALVES = {"locomo": ((0, 1, 2), (3, 4)), "longchat": ((0, 1, 2), (3, 4, 5))}


class FirstWindow(MiniLMEmbedder):
    """MiniLM that keeps only a text's first 256-token window (truncation: the
    off state of "long texts whole")."""

    def _windows(self, texts: list[str]) -> tuple[list[list[int]], list[int]]:
        wins, owner = super()._windows(texts)
        seen: set[int] = set()
        keep = [i for i, o in enumerate(owner) if not (o in seen or seen.add(o))]  # type: ignore[func-returns-value]
        return [wins[i] for i in keep], [owner[i] for i in keep]


class Cached:
    """An embedder whose vectors are remembered by text (per ``variant``)."""

    def __init__(self, inner: MiniLMEmbedder, store: dict[str, np.ndarray], variant: str):
        self.inner, self.store, self.variant = inner, store, variant
        self.name, self.dim = inner.name, inner.dim

    def _key(self, text: str) -> str:
        return self.variant + hashlib.blake2b(text.encode(), digest_size=16).hexdigest()

    def keys(self, texts: list[str]) -> list[str]:
        return [self._key(t) for t in texts]

    def embed(self, texts: list[str]) -> np.ndarray:
        keys = self.keys(texts)
        miss = sorted({(k, t) for k, t in zip(keys, texts, strict=True) if k not in self.store})
        if miss:
            for (k, _), v in zip(miss, self.inner.embed([t for _, t in miss]), strict=True):
                self.store[k] = v
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self.store[k] for k in keys])


class CachedFirst(Cached):
    """:class:`FirstWindow` cached; a text within one window has the whole text's vector
    (the same model output), so it is looked up under that variant's key."""

    def keys(self, texts: list[str]) -> list[str]:
        if self.inner._tokenizer is None:
            self.inner._load()
        _, owner = MiniLMEmbedder._windows(self.inner, texts)
        many = {o for i, o in enumerate(owner) if i and owner[i - 1] == o}
        return [self._key(t) if i in many else "w" + self._key(t)[1:]
                for i, t in enumerate(texts)]


@dataclass(frozen=True, slots=True)
class Variant:
    """One pipeline: the scoring config, the conversation config, the embedder
    (``None``: BM25 alone)."""

    config: ScoringConfig
    conv: ConversationConfig
    embedder: str | None = "whole"


Halves = tuple[tuple[float, float], tuple[float, float]]  # per half: (R@5, R@10)

DEFAULT = Variant(ScoringConfig(), ConversationConfig())
#: technique -> the pipeline with it off
TECHNIQUES: dict[str, Callable[[Variant], Variant]] = {
    "meaning (MiniLM, hybrid)": lambda v: replace(v, embedder=None),
    "context glue (neighbour turns)": lambda v: replace(v, conv=replace(v.conv, before=0,
                                                                         after=0)),
    "speaker boost": lambda v: replace(v, config=replace(v.config, speaker_boost=0.0)),
    "neighbour spread": lambda v: replace(v, config=replace(v.config, neighbour_weight=0.0)),
    "time boost": lambda v: replace(v, config=replace(v.config, time_boost=0.0)),
    "long texts whole (vs first 256 tokens)": lambda v: replace(v, embedder="first"),
    "long messages step aside (glue, spread)": lambda v: replace(
        v, config=replace(v.config, long_message_chars=0),
        conv=replace(v.conv, long_message_chars=0)),
}


def data_of(name: str) -> list[dict[str, Any]]:
    return load() if name == "locomo" else longchat.generate()


def _by_half(name: str, data: list[dict[str, Any]], per: list[tuple[str, float, float]]
             ) -> Halves:
    out = []
    for half in HALVES[name]:
        want = {data[i]["sample_id"] for i in half if i < len(data)}
        rows = [(r5, r10) for s, r5, r10 in per if s in want]
        n = max(1, len(rows))
        out.append((sum(r[0] for r in rows) / n, sum(r[1] for r in rows) / n))
    return out[0], out[1]


def run_variant(name: str, data: list[dict[str, Any]], v: Variant,
                embedders: dict[str, Cached]) -> Halves:
    """Evidence recall per half of ``data`` with the pipeline ``v`` (engine, settled)."""
    engine = SearchEngine(embedders[v.embedder] if v.embedder else None, v.config)
    for s in data:
        engine.add(engine_entries(s["sample_id"], s, v.conv))
    per = []
    for sample, _cat, ev, question in _questions(data):
        got = ask(engine, sample, question, 10, None)
        row = _scored(sample, _cat, ev, got, 0)
        per.append((sample, row[2], row[3]))
    return _by_half(name, data, per)


def bm25s_alone(name: str, data: list[dict[str, Any]]) -> Halves:
    """bm25s (English stop words, Snowball stemmer) on ``speaker: text`` per turn."""
    import bm25s
    import Stemmer

    stem = Stemmer.Stemmer("english")
    per = []
    qs = _questions(data)
    for s in data:
        conv = s["conversation"]
        turns = [t for k, v in conv.items() if k.startswith("session_") and isinstance(v, list)
                 for t in v]
        texts = [f"{t['speaker']}: {t.get('text', '')}"
                 + (f" {t['blip_caption']}" if t.get("blip_caption") else "") for t in turns]
        ids = [t["dia_id"] for t in turns]
        r = bm25s.BM25()
        r.index(bm25s.tokenize(texts, stopwords="en", stemmer=stem, show_progress=False),
                show_progress=False)
        for sample, _cat, ev, question in qs:
            if sample != s["sample_id"]:
                continue
            toks = bm25s.tokenize([question], stopwords="en", stemmer=stem, show_progress=False)
            k = min(10, len(texts))
            docs, _ = r.retrieve(toks, k=k, show_progress=False)
            got = [ids[i] for i in docs[0].tolist()]
            per.append((sample, len(ev & set(got[:5])) / len(ev), len(ev & set(got)) / len(ev)))
    return _by_half(name, data, per)


#: A change of recall below this on a half is no change.
EPS = 0.002


def verdict(delta: tuple[float, float]) -> str:
    """What the (half 1, half 2) recall gains of a technique say: keep it only on "gains
    on both"; "neutral" changes nothing; one half gaining and the other not moving is
    "gains on one"; any half losing: "costs"."""
    if all(abs(d) < EPS for d in delta):
        return "neutral"
    if all(d >= EPS for d in delta):
        return "gains on both"
    if all(d > -EPS for d in delta):
        return "gains on one"
    return "costs on both" if all(d <= -EPS for d in delta) else "costs on one"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--data", default="locomo,longchat")
    ap.add_argument("--only", default=None, help="comma-separated technique names (prefixes)")
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    sets = [d.strip() for d in a.data.split(",") if d.strip()]
    bad = [d for d in sets if d not in HALVES]
    if bad:
        raise SystemExit(f"--data: {bad} unknown; choose from {', '.join(HALVES)}")
    techniques = {k: f for k, f in TECHNIQUES.items()
                  if a.only is None or any(k.startswith(p.strip()) for p in a.only.split(","))}
    store: dict[str, np.ndarray] = {}
    if a.cache.exists():
        store = pickle.loads(a.cache.read_bytes())
    embedders = {"whole": Cached(MiniLMEmbedder(), store, "w"),
                 "first": CachedFirst(FirstWindow(), store, "f")}
    report: dict[str, Any] = {}
    try:
        for name in sets:
            data = data_of(name)
            base = run_variant(name, data, DEFAULT, embedders)
            rows = {"bm25s alone": bm25s_alone(name, data), "full pipeline": base}
            deltas = {}
            for tech, off in techniques.items():
                got = run_variant(name, data, off(DEFAULT), embedders)
                rows[f"without {tech}"] = got
                deltas[tech] = (base[0][1] - got[0][1], base[1][1] - got[1][1])
            report[name] = {"rows": rows, "deltas": deltas}
    finally:  # another run may have added vectors meanwhile: merge, never drop theirs
        if a.cache.exists():
            store = {**pickle.loads(a.cache.read_bytes()), **store}
        a.cache.write_bytes(pickle.dumps(store))
    if a.json:
        print(json.dumps(report, indent=2))
        return 0
    for name, rep in report.items():
        print(f"\n{name} (halves {HALVES[name][0]} / {HALVES[name][1]}, 0-based), settled")
        print(f"{'pipeline':44} {'R@5':>13} {'R@10':>13}")
        for row, (h1, h2) in rep["rows"].items():
            print(f"{row:44} {h1[0]:.3f} / {h2[0]:.3f} {h1[1]:.3f} / {h2[1]:.3f}")
        print(f"{'technique':44} {'R@10 gain (half 1 / half 2)':>30}  verdict")
        for tech, d in rep["deltas"].items():
            print(f"{tech:44} {d[0]:+.3f} / {d[1]:+.3f}{'':14}  {verdict(d)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
