"""The REST response shapes of :mod:`memory.response_bodies` (pure: no Redis)."""

from __future__ import annotations

import json

import numpy as np

from blackboard import Entry, EntryRef
from memory.response_bodies import Hit, RecallResponse
from retrieval.completeness import RecallHits, RouteReport
from retrieval.scoring import ScoredEntry

S = "agent:a1:working"


def _varied() -> RecallHits:
    """Hits with every kind of field a recall returns: structured values, claims in the
    metadata and tags, whole-number and numpy numbers, folded copies, citations."""
    plain = Entry(id="w1", scope=S, value="Acme pays net-30", tags=frozenset({"b", "a"}),
                  importance=1, strength=1, metadata={"agent": "b1", "n": [1, 2.5, None]},
                  author="a1", created_at=1_700_000_000_000, version=3)
    shaped = Entry(id="s1", scope="agent:a1:ltm:semantic",
                   value={"statement": "Acme pays net-30", "confidence": 0.8,
                          "evidence": [{"id": "w1", "stance": "support"}]},
                   tags=frozenset({"agent:c1", "belief"}), source=("w1", "w2"),
                   reinforced_by=("a2",), superseded_by="s2", embedder="minilm",
                   uses=4, helpful=2, key="acme-terms")
    return RecallHits(
        [ScoredEntry(plain, S, np.float32(0.5), np.float64(1.25), 0.9, 1.0, 1.0, 0.5, 0.9,
                     also_in=(EntryRef("team:t1:working", "x9"),), has_vector=True),
         ScoredEntry(shaped, shaped.scope, None, 0.7, 0.4, 1, 1.0, 0.5, 0.4,
                     cites=("w1",), has_first_pass=True, newer_than="s0")],
        3, RouteReport(intent="time_boxed", route="hybrid", indexes=("bm25",),
                       notes=("dense failed: ConnectionError",), partial=True),
        [{"level": "month", "at": "2023-05", "count": 2}])


def test_recall_json_is_the_models_json_byte_for_byte() -> None:
    hits = _varied()
    for scopes in (None, [S, "team:t1:working"]):
        fast = RecallResponse.json_of(hits, scopes)
        assert fast == RecallResponse.of(hits, scopes).model_dump_json().encode()
        back = RecallResponse.model_validate_json(fast)
        assert back.to_hits().route == hits.route and back.scopes == scopes
    assert RecallResponse.json_of([]) == RecallResponse.of([]).model_dump_json().encode()


def test_hit_fields_keep_the_library_values() -> None:
    h = Hit.of(_varied()[0])
    assert h.entry.tags == ["a", "b"] and h.entry.claimed_agents == ["b1"]
    assert h.components.dense == 0.5 and h.also_in[0].scope == "team:t1:working"
    assert json.loads(h.model_dump_json())["entry"]["importance"] == 1.0
