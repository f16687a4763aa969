from __future__ import annotations

import fnmatch
import itertools
import threading
import time

import numpy as np
import pytest

from blackboard.decay import strength_at
from blackboard.entry import Entry, ScopePolicy
from retrieval import HashingEmbedder, MemoryQuery, ScoringConfig, SearchEngine, TagFilter
from retrieval import backlog as backlog_mod
from retrieval.embedders.base import Vectors
from retrieval.text import entry_text

DAY = 86_400_000
NOW = 1_700_000_000_000


class CountingEmbedder:
    """HashingEmbedder that counts the texts it embeds."""

    def __init__(self, dim: int = 64) -> None:
        self.inner = HashingEmbedder(dim)
        self.name = self.inner.name
        self.dim = dim
        self.calls = 0
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> Vectors:
        self.calls += 1
        self.texts += texts
        return self.inner.embed(texts)


TOPICS = ["deploy server", "database backup", "user login", "payment error", "cache warmup"]
TAGS = ["action", "error", "fact", "procedure", "noise"]


def corpus(scope: str = "s", n: int = 60) -> list[Entry]:
    out = []
    for i in range(n):
        tags = frozenset(t for j, t in enumerate(TAGS) if (i >> j) & 1)
        out.append(
            Entry(
                id=f"{scope}-{i}",
                scope=scope,
                value=f"{TOPICS[i % 5]} step {i}",
                tags=tags,
                key=f"k/{i % 3}/{i}" if i % 4 else None,
                created_at=NOW - i * DAY,
                strength=1.0 - i / 100,
                strength_at=NOW - i * DAY,
                reinforcements=i % 3,
                importance=(i % 10) / 10,
            )
        )
    return out


def engine(cfg: ScoringConfig | None = None) -> tuple[SearchEngine, CountingEmbedder]:
    emb = CountingEmbedder()
    return SearchEngine(emb, cfg or ScoringConfig(dense_floor=0.2)), emb


TAG_FILTERS = [
    TagFilter(),
    TagFilter(all_of=frozenset({"action"})),
    TagFilter(any_of=frozenset({"error", "fact"})),
    TagFilter(none_of=frozenset({"noise"})),
    TagFilter(
        all_of=frozenset({"action"}),
        any_of=frozenset({"fact", "procedure"}),
        none_of=frozenset({"error"}),
    ),
]
TIME_RANGES = [None, (NOW - 20 * DAY, NOW - 5 * DAY)]
KEYS = [None, "k/1/*"]
STRENGTHS = [None, 0.5]


@pytest.mark.parametrize(
    ("tf", "tr", "kp", "ms", "text"),
    list(itertools.product(TAG_FILTERS, TIME_RANGES, KEYS, STRENGTHS, [None, "deploy server"])),
)
def test_every_filter_combination(
    tf: TagFilter, tr: tuple[int, int] | None, kp: str | None, ms: float | None, text: str | None
) -> None:
    eng, _ = engine()
    eng.set_policy("s", ScopePolicy(decay_rate=0.02, decay_tick=86_400))
    entries = corpus()
    eng.add(entries)
    q = MemoryQuery(
        query=text, tag_filter=tf, time_range=tr, key_pattern=kp, min_strength=ms, max_results=100
    )
    hits = eng.search(q, ["s"], now_ms=NOW)

    def ok(e: Entry) -> bool:
        s = strength_at(e.strength, e.strength_at, NOW, 0.02, e.reinforcements, 86_400_000)
        return (
            tf.matches(e.tags)
            and (tr is None or tr[0] <= e.created_at <= tr[1])
            and (kp is None or (e.key is not None and fnmatch.fnmatchcase(e.key, kp)))
            and (ms is None or s >= ms)
        )

    allowed = {e.id for e in entries if ok(e)}
    got = {h.entry.id for h in hits}
    assert got <= allowed
    if text is None:
        assert got == allowed  # every allowed entry is a candidate with no text
    else:
        # every allowed entry about the topic is found (filters applied before ranking)
        assert {e.id for e in entries if e.id in allowed and "deploy" in e.value} <= got
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_remove_and_update_leave_both_indexes() -> None:
    eng, _ = engine()
    eng.add(corpus())
    assert any(h.entry.id == "s-0" for h in eng.search("deploy server step 0", ["s"], NOW))
    assert eng.remove(["s-0", "missing"]) == 1
    cat = eng._scopes["s"]
    assert "s-0" not in cat.row_of and len(cat.dense or []) == 59 and len(cat.bm25) == 59
    assert all(h.entry.id != "s-0" for h in eng.search("deploy server step 0", ["s"], NOW))
    old = eng.get("s-5")
    assert old is not None
    eng.add([Entry(id="s-5", scope="s", value="zebra crossing", created_at=NOW)])
    assert len(cat.dense or []) == 59 and len(cat.bm25) == 59
    assert eng.search("zebra", ["s"], NOW)[0].entry.id == "s-5"
    assert all(h.entry.id != "s-5" for h in eng.search("cache warmup step 5", ["s"], NOW))


def test_stored_embeddings_are_reused_and_foreign_ones_reembedded() -> None:
    eng, emb = engine()
    base = corpus(n=10)
    vecs = emb.inner.embed([entry_text(e) for e in base])
    own = [
        Entry(
            **{
                **{f: getattr(e, f) for f in e.__slots__},
                "embedding": vecs[i].tobytes(),
                "embedder": emb.name,
            }
        )
        for i, e in enumerate(base[:5])
    ]
    foreign = [
        Entry(
            **{
                **{f: getattr(e, f) for f in e.__slots__},
                "embedding": vecs[i].tobytes(),
                "embedder": "other-model",
            }
        )
        for i, e in enumerate(base[5:], start=5)
    ]
    eng.add(own + foreign, embed_now=False)
    assert emb.calls == 0 and eng.stats().pending_embeddings == 5
    eng.search("deploy", ["s"], NOW)  # flushes the queue first (read-your-writes), + 1 query
    assert sorted(emb.texts[:-1]) == sorted(entry_text(e) for e in base[5:])
    assert eng.stats().embedded_texts == 5 and eng.stats().pending_embeddings == 0
    eng.add(own)  # same vectors again: still no document embedding
    assert eng.stats().embedded_texts == 5


def test_no_query_vector_while_no_searched_entry_has_one() -> None:
    # A one-shot recall of a fresh memory (more unembedded entries than a search embeds
    # inline) ranks by BM25 alone either way: the query's vector would meet none, so the
    # model is not asked for it (it loads in seconds). Once an entry has a vector, it is.
    eng, emb = engine()
    eng.inline_embed = 5
    base = corpus(n=10)
    eng.add(base, embed_now=False)
    bm25_only = eng.search("deploy server", ["s"], NOW)
    assert emb.calls == 0 and eng.stats().pending_embeddings == 10
    assert bm25_only and all(h.dense is None for h in bm25_only)
    eng.inline_embed = 64
    eng.search("deploy server", ["s"], NOW)  # within the bound: embedded inline, + 1 query
    assert emb.texts[-1] == "deploy server" and eng.stats().pending_embeddings == 0


def test_scopes_merge_on_comparable_scores() -> None:
    eng, _ = engine()
    eng.add(corpus("a", 30) + corpus("b", 30))
    hits = eng.search(MemoryQuery(query="payment error", max_results=20), ["a", "b"], NOW)
    assert {h.scope for h in hits} == {"a", "b"}
    assert hits[0].fused == pytest.approx(max(h.fused for h in hits))
    only_a = eng.search(MemoryQuery(query="payment error", scopes=["a"]), now_ms=NOW)
    assert {h.scope for h in only_a} == {"a"}


def test_relevance_floor_unrelated_query_returns_nothing() -> None:
    eng, _ = engine(ScoringConfig(dense_floor=0.35))
    eng.add(corpus())
    assert eng.search("xylophone quasar", ["s"], NOW) == []
    assert eng.search("payment", ["s"], NOW)


def test_bm25_only_without_embedder() -> None:
    eng = SearchEngine(None)
    eng.add(corpus())
    hits = eng.search("database backup", ["s"], NOW)
    assert hits and all("database" in h.entry.value for h in hits)
    assert all(h.dense is None and (h.bm25 or 0) > 0 for h in hits)


def test_explain_and_components() -> None:
    eng, _ = engine()
    eng.add(corpus())
    h = eng.search(MemoryQuery(query="user login", explain=True), ["s"], NOW)[0]
    text = h.explain()
    assert h.entry.id in text and "dense cos=" in text and "bm25=" in text
    cfg = eng.config
    expect = (
        cfg.w_relevance * h.fused
        + cfg.w_strength * min(h.strength, 1.0)
        + cfg.w_recency * h.recency
        + cfg.w_importance * h.importance
    )
    assert h.score == pytest.approx(expect)


def test_rrf_and_mmr() -> None:
    eng, _ = engine()
    dup = [
        Entry(id=f"d{i}", scope="s", value="deploy server now", created_at=NOW) for i in range(5)
    ]
    other = [Entry(id="o", scope="s", value="deploy the database server later", created_at=NOW)]
    eng.add(dup + other)
    plain = eng.search(MemoryQuery(query="deploy server now", max_results=3), ["s"], NOW)
    assert all(h.entry.id.startswith("d") for h in plain)
    div = eng.search(MemoryQuery(query="deploy server now", max_results=3, mmr=0.3), ["s"], NOW)
    assert "o" in {h.entry.id for h in div}
    r = eng.search(MemoryQuery(query="deploy server now", fusion="rrf"), ["s"], NOW)
    assert r and 0 < r[0].fused <= 1.0


def test_expired_entries_are_skipped() -> None:
    eng, _ = engine()
    eng.add(
        [
            Entry(id="live", scope="s", value="deploy", created_at=NOW),
            Entry(id="gone", scope="s", value="deploy", created_at=NOW, expires_at=NOW - 1),
        ]
    )
    assert [h.entry.id for h in eng.search("deploy", ["s"], NOW)] == ["live"]


def test_entry_text() -> None:
    e = Entry(
        id="1",
        scope="s",
        value={"title": "Plan", "steps": ["a", "b"], "n": 3, "ok": True},
        metadata={"speaker": "Ann", "date": "1 May 2023"},
    )
    assert entry_text(e) == "Ann: title: Plan\nsteps: a\nb\nn: 3\n1 May 2023"


def test_unknown_scope_and_empty() -> None:
    eng, _ = engine()
    assert eng.search("x", ["nope"], NOW) == []
    eng.add(corpus())
    assert (
        eng.search(MemoryQuery(tag_filter=TagFilter(all_of=frozenset({"missing"}))), ["s"], NOW)
        == []
    )
    assert np.isfinite([h.score for h in eng.search("deploy", None, NOW)]).all()


def test_a_search_embeds_a_short_queue_itself_and_leaves_a_backlog() -> None:
    # What was just written is found by meaning: a short queue is embedded by the search.
    # A queue longer than `inline_embed` means the model is behind the writes: the search
    # ranks those entries by BM25 alone rather than pay for the backlog.
    eng, emb = engine()
    eng.inline_embed = 4
    docs = corpus(n=10)
    eng.add(docs[:4], embed_now=False)
    hits = eng.search(MemoryQuery(query="step", max_results=10), ["s"], NOW)
    assert all(h.dense is not None for h in hits) and len(hits) == 4
    assert eng.stats().pending_embeddings == 0
    calls = emb.calls
    eng.add(docs[4:], embed_now=False)  # 6 waiting: a backlog
    hits = eng.search(MemoryQuery(query="step", max_results=10), ["s"], NOW)
    assert emb.calls == calls + 1  # the query only
    assert {h.entry.id for h in hits} == {e.id for e in docs}  # all found, by BM25 too
    assert {h.entry.id for h in hits if h.dense is None} == {e.id for e in docs[4:]}
    assert eng.stats().pending_embeddings == 6
    assert eng.flush_embeddings() == 6
    # a queue of another scope is not this search's to embed
    eng.add([Entry(id="t-0", scope="t", value="step elsewhere", created_at=NOW)],
            embed_now=False)
    calls = emb.calls
    hits = eng.search(MemoryQuery(query="step", max_results=10), ["s"], NOW)
    assert all(h.dense is not None for h in hits) and emb.calls == calls + 1
    assert eng.stats().pending_embeddings == 1


def test_a_search_waits_for_the_batch_embedding_its_entries(monkeypatch) -> None:
    # A batch is being embedded in another thread (outside the engine's lock) when a search
    # needs its entries: the search takes the batch's vectors when they come, and computes
    # none of them a second time.
    eng, emb = engine()
    docs = corpus(n=6)
    eng.add(docs, embed_now=False)
    batch = eng.take_pending(4)  # the 4 oldest, out of the queue
    assert [r for _, r, _ in batch] == [0, 1, 2, 3] and eng.waiting == 2
    got: list[np.ndarray] = []
    t = threading.Thread(target=lambda: (time.sleep(0.2), got.append(eng.embed_pending(batch))))
    t.start()
    hits = eng.search(MemoryQuery(query="step", max_results=10), ["s"], NOW)
    t.join()
    assert all(h.dense is not None for h in hits) and len(hits) == 6
    assert sorted(emb.texts) == sorted([entry_text(e) for e in docs] + ["step"])  # each once
    # the batch's own put, later, finds nothing left to set
    assert eng.put_vectors(batch, got[0]) == 0 and eng.stats().pending_embeddings == 0
    # a batch whose embedding never comes (stuck, or failed): the search embeds its own
    monkeypatch.setattr(backlog_mod, "OUT_WAIT_S", 0.05)
    eng.add([Entry(id="s-new", scope="s", value="fresh words", created_at=NOW)],
            embed_now=False)
    stuck = eng.take_pending()
    assert len(stuck) == 1 and eng.stats().pending_embeddings == 1
    hits = eng.search(MemoryQuery(query="fresh", max_results=10), ["s"], NOW)
    assert hits[0].entry.id == "s-new" and hits[0].dense is not None
    # a failed batch goes back to the queue; what a search embedded meanwhile is not redone
    eng.requeue(stuck)
    assert eng.flush_embeddings() == 0 and eng.stats().pending_embeddings == 0


def test_the_engine_knows_which_scopes_hold_copies() -> None:
    # A recall ranks more and collapses copies only where a scope holds one.
    eng, _ = engine()
    eng.add(corpus(n=3))
    assert not eng.has_copies(["s", "nowhere"])
    copy = Entry(id="c-1", scope="t", value="deploy server step 0", created_at=NOW,
                 metadata={"origin_id": "s-0"})
    eng.add([copy])
    assert eng.has_copies(["s", "t"]) and not eng.has_copies(["s"])
    eng.remove(["c-1"])
    assert not eng.has_copies(["t"])
