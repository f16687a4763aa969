"""How complete a recall was (issue 31): ``dense_pending`` and ``has_vector`` on every
result, ``consistency="semantic"`` waiting for the vectors (or failing, naming the
backlog), and the scopes being searched embedded first."""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt
import pytest
from pydantic import ValidationError
from recall_support import CountingEmbedder

from blackboard import Blackboard, Entry
from retrieval import MemoryQuery, Retriever, SearchEngine
from retrieval.completeness import EmbeddingBacklog, RecallHits

S = "agent:a1:working"


class GatedEmbedder(CountingEmbedder):
    """Embeds entries only while ``gate`` is set (a model far behind the writes, on
    demand); a query (one text) goes through."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        if len(texts) > 1:
            self.gate.wait(30)
        return super().embed(texts)


def _entries(scope: str, n: int) -> list[Entry]:
    return [Entry(id=f"{scope}-{i}", scope=scope, value=f"note {i} about tulips")
            for i in range(n)]


def test_slice_keeps_the_count() -> None:
    hits = RecallHits([], 7)
    assert hits[:3].dense_pending == 7 and isinstance(hits[:3], RecallHits)


def test_unknown_consistency_names_the_field() -> None:
    with pytest.raises(ValidationError, match="consistency"):
        MemoryQuery(query="x", consistency="eventual")  # type: ignore[arg-type]


def test_backlog_error_names_the_backlog() -> None:
    err = EmbeddingBacklog({"a:1": 5, "b:2": 1}, 2.0)
    assert "6 entries still waiting" in str(err) and "a:1: 5" in str(err)
    assert isinstance(err, TimeoutError)


def test_engine_counts_and_marks_what_lacks_a_vector() -> None:
    eng = SearchEngine(CountingEmbedder())
    eng.add(_entries("s:a", 5), embed_now=False)
    assert eng.unembedded(["s:a", "s:none"]) == {"s:a": 5}
    hits = eng.mark_vectors(eng.search(MemoryQuery(query="tulips", max_results=3)), True)
    # the search embedded its five itself (below inline_embed): all have vectors now
    assert eng.unembedded(["s:a"]) == {} and all(h.has_vector for h in hits)
    assert SearchEngine(None).unembedded(["s:a"]) == {}  # no embedder: nothing waits


def test_searched_scopes_are_embedded_first() -> None:
    eng = SearchEngine(CountingEmbedder(), inline_embed=0)
    eng.add(_entries("s:old", 300) + _entries("s:hot", 10), embed_now=False)
    eng.search(MemoryQuery(query="tulips"), ["s:hot"])  # too many to embed inline
    batch = eng.take_pending(128)
    assert {x[0].scope for x in batch[:10]} == {"s:hot"}
    eng.put_vectors(batch, eng.embed_pending(batch))
    assert "s:hot" not in eng.unembedded(["s:hot"])


async def test_recall_reports_and_semantic_waits(bb: Blackboard) -> None:
    emb = GatedEmbedder()
    async with Retriever(bb, embedder=emb, semantic_timeout=0.3) as r:
        r.engine.inline_embed = 0  # the model is behind: no search embeds for itself
        await bb.scope(S).write_many([f"note {i} about tulips" for i in range(20)])
        hits = await r.recall(MemoryQuery(query="tulips", max_results=5), [S])
        assert len(hits) == 5 and hits.dense_pending == 20
        assert not any(h.has_vector for h in hits)
        with pytest.raises(EmbeddingBacklog, match="20 entries still waiting"):
            await r.recall(MemoryQuery(query="tulips", consistency="semantic"), [S])
        emb.gate.set()
        r.semantic_timeout = 30
        full = await r.recall(MemoryQuery(query="tulips", max_results=5,
                                          consistency="semantic"), [S])
        assert full.dense_pending == 0 and all(h.has_vector and h.dense is not None
                                               for h in full)


class GatedWithFirstPass(GatedEmbedder):
    """The gated model with MiniLM's first pass (its static token vectors: no model run)."""

    def first_pass(self) -> object:
        from retrieval.embedders import MiniLMEmbedder

        return MiniLMEmbedder().first_pass()


async def test_recall_right_after_a_bulk_write_ranks_by_first_pass(bb: Blackboard) -> None:
    from retrieval.embedders import minilm_available

    if minilm_available() is not None:
        pytest.skip(f"MiniLM's files: {minilm_available()}")
    emb = GatedWithFirstPass()
    notes = ["Acme pays its invoices net-30", "the office plants need water on Mondays",
             "Bob prefers tea to coffee", "the build server reboots at midnight"]
    async with Retriever(bb, embedder=emb) as r:
        r.engine.inline_embed = 0  # the model is behind: nothing embedded for the search
        await bb.scope(S).write_many(notes * 5)
        hits = await r.recall(MemoryQuery(query="when is the bill due", max_results=3), [S])
        # no word in common: found by rough meaning alone, and each hit says how
        assert hits.dense_pending == 20 and hits[0].entry.value == notes[0]
        assert all(h.has_first_pass and not h.has_vector for h in hits)
        emb.gate.set()
        full = await r.recall(MemoryQuery(query="when is the bill due", max_results=3,
                                          consistency="semantic"), [S])
        assert full.dense_pending == 0
        assert all(h.has_vector and not h.has_first_pass for h in full)
