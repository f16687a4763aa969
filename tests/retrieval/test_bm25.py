from __future__ import annotations

import random

import bm25s
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from retrieval import BM25Params
from retrieval.analyzer import Analyzer
from retrieval.bm25 import BM25Index, _sum_by_slot

WORDS = [
    "apple",
    "banana",
    "cherry",
    "dog",
    "elephant",
    "fish",
    "grape",
    "house",
    "island",
    "jungle",
    "kite",
    "lemon",
    "mango",
    "night",
    "ocean",
    "piano",
    "queen",
    "river",
    "sun",
    "tree",
    "umbrella",
    "violin",
    "water",
    "xray",
    "yacht",
    "zebra",
    "running",
    "runs",
    "ran",
    "the",
    "and",
    "of",
]
QUERIES = ["apple dog", "zebra ocean river runs", "kite", "running house the", "violin violin"]
ANALYZER = Analyzer()


def reference_top(texts: dict[int, str], query: str, variant: str, k: int) -> list[float]:
    """Top-k scores of a bm25s index built from scratch over ``texts`` (matching docs)."""
    keys = list(texts)
    qt = ANALYZER.terms([query])[0]
    terms = set(qt)
    hit = [bool(terms & set(ANALYZER.terms([texts[i]])[0])) for i in keys]
    if not any(hit):  # (bm25s cannot index a corpus without terms)
        return []
    ref = bm25s.BM25(method=variant, dtype="float64")
    ref.index(ANALYZER.terms([texts[i] for i in keys]), show_progress=False)
    scores = ref.get_scores(qt)
    matched = [s for h, s in zip(hit, scores, strict=True) if h]
    return sorted(matched, reverse=True)[:k]


ops = st.lists(
    st.tuples(
        st.sampled_from(["add", "remove", "compact"]),
        st.integers(0, 40),
        st.lists(st.sampled_from(WORDS), min_size=0, max_size=10),
    ),
    min_size=1,
    max_size=60,
)


@pytest.mark.parametrize("variant", ["lucene", "robertson", "bm25+"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops)
def test_differential_vs_rebuild(variant: str, ops: list[tuple[str, int, list[str]]]) -> None:
    idx = BM25Index(variant=variant, min_delta=8, compact_fraction=0.5, background=False)
    live: dict[int, str] = {}
    for op, doc, words in ops:
        if op == "add":
            text = " ".join(words)
            idx.add([doc], [text])
            live[doc] = text
        elif op == "remove":
            idx.remove([doc])
            live.pop(doc, None)
        else:
            idx.compact()
    assert len(idx) == len(live)
    for q in QUERIES:
        got = idx.search(q, 10)
        want = reference_top(live, q, variant, 10)
        assert len(got.scores) == len(want)
        np.testing.assert_allclose(got.scores, want, atol=1e-5)
        assert set(got.ids.tolist()) <= set(live)


def test_remove_and_update_disappear() -> None:
    idx = BM25Index(background=False)
    idx.add([1, 2, 3], ["red apple", "green apple", "blue sky"])
    assert set(idx.search("apple", 10).ids.tolist()) == {1, 2}
    assert idx.remove([1, 99]) == 1
    assert idx.search("apple", 10).ids.tolist() == [2]
    idx.update(2, "green pear")
    assert len(idx.search("apple", 10).ids) == 0
    assert idx.search("pear", 10).ids.tolist() == [2]
    assert idx.document_frequency("appl") == 0 and len(idx) == 2


def test_filters_apply_before_ranking() -> None:
    idx = BM25Index(background=False)
    idx.add(list(range(20)), ["cat cat cat"] * 10 + ["cat"] * 10)
    hits = idx.search("cat", 3, allowed_ids=np.array([15, 16, 17, 18]))
    assert len(hits.ids) == 3 and set(hits.ids.tolist()) <= {15, 16, 17, 18}
    assert len(idx.search("cat", 3, allowed_ids=np.zeros(0, np.int64)).ids) == 0
    s = idx.scores_for("cat", np.array([0, 15, 42]))
    assert s[0] > s[1] > 0 and s[2] == 0


def test_background_compaction_keeps_scores() -> None:
    rng = random.Random(3)
    texts = {i: " ".join(rng.choices(WORDS, k=rng.randint(1, 12))) for i in range(3000)}
    idx = BM25Index(min_delta=200, compact_fraction=0.05, background=True)
    for i in range(0, 3000, 100):
        idx.add(list(range(i, i + 100)), [texts[j] for j in range(i, i + 100)])
    idx.remove(list(range(0, 3000, 3)))
    idx.wait_compaction()
    live = {i: t for i, t in texts.items() if i % 3}
    for q in QUERIES:
        np.testing.assert_allclose(
            idx.search(q, 10).scores, reference_top(live, q, "lucene", 10), atol=1e-5
        )


def test_overlap_with_rank_bm25() -> None:
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(400)]
    docs = [" ".join(rng.choices(vocab, k=rng.randint(5, 40))) for _ in range(2000)]
    idx = BM25Index(params=BM25Params(k1=1.5, b=0.75), background=False)
    idx.add(list(range(len(docs))), docs)
    okapi = BM25Okapi([ANALYZER.terms([d])[0] for d in docs])
    overlaps = []
    for _ in range(50):
        q = " ".join(rng.choices(vocab, k=3))
        ref = np.argsort(-okapi.get_scores(ANALYZER.terms([q])[0]))[:10]
        got = idx.search(q, 10).ids
        overlaps.append(len(set(ref.tolist()) & set(got.tolist())) / 10)
    assert float(np.mean(overlaps)) >= 0.8


def test_unknown_variant() -> None:
    with pytest.raises(ValueError, match="known: bm25\\+, lucene, robertson"):
        BM25Index(variant="nope")


@pytest.mark.parametrize("seed", range(5))
def test_both_ways_of_summing_postings_agree(seed: int) -> None:
    # A common term's postings are summed into an array over every slot, a rare term's by
    # sorting them: the two must give the same documents and scores (zero sums included).
    rng = np.random.default_rng(seed)
    slots = rng.integers(0, 1000, 400).astype(np.int64)
    w = rng.random(400) * (rng.random(400) > 0.2)  # some postings weigh nothing
    w2 = rng.random(400)
    dense = _sum_by_slot(slots, w, w2, 1000)  # 400 postings for 1000 slots: dense
    sparse = _sum_by_slot(slots, w, w2, 10**6)  # for a million: sorted
    want = np.unique(slots)
    for got in (dense, sparse):
        np.testing.assert_array_equal(got[0], want)
    np.testing.assert_allclose(dense[1], sparse[1])
    np.testing.assert_allclose(dense[1], [w[slots == s].sum() for s in want])
    assert dense[2] is not None and sparse[2] is not None
    np.testing.assert_allclose(dense[2], sparse[2])
    assert _sum_by_slot(slots, w, None, 1000)[2] is None
