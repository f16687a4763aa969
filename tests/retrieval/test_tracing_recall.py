"""A recall's stages are spans (blackboard.tracing): the recall, its search, the query's
embedding, the candidates of each scope by meaning and by words, fusion, current truth and
the collapse of repeated facts; the query's text is never recorded."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from recall_support import CountingEmbedder

from blackboard import Blackboard
from memory import AgentMemory, MemoryLevel
from retrieval import Retriever
from tests.support_tracing import in_memory_spans

pytest.importorskip("opentelemetry.sdk.trace", reason="needs the [otel] extra")
#: OpenTelemetry is a framework integration: CI runs these on its first Redis only.
pytestmark = pytest.mark.integration


@pytest.fixture()
def spans() -> Iterator[Any]:
    with in_memory_spans() as exporter:
        yield exporter


@pytest.fixture()
async def mem(bb: Blackboard) -> AsyncIterator[AgentMemory]:
    r = Retriever(bb, embedder=CountingEmbedder())
    async with AgentMemory(bb, "a1", retriever=r) as m:
        yield m
    await r.aclose()


async def test_a_recall_is_a_span_with_a_span_per_stage(mem: AgentMemory, spans: Any) -> None:
    await mem.store("deploy of service api failed: disk full")
    await mem.store("Alice prefers green tea", level=MemoryLevel.SEMANTIC)
    spans.clear()
    hits = await mem.recall("secret words about the deploy")
    assert hits
    got = spans.get_finished_spans()
    (recall,) = [s for s in got if s.name == "retrieval.recall"]
    assert recall.attributes["retrieval.hits"] == len(hits)
    names = {s.name for s in got}
    assert {"retrieval.search", "retrieval.embed_query", "retrieval.candidates",
            "retrieval.dense", "retrieval.lexical", "retrieval.fusion", "retrieval.truth",
            "retrieval.collapse"} <= names
    # every stage is inside the recall's trace, under the recall span
    by_id = {s.context.span_id: s for s in got}
    for s in got:
        if s.name.startswith("retrieval.") and s is not recall:
            assert s.context.trace_id == recall.context.trace_id
            up = s
            while up.parent is not None and up is not recall:
                up = by_id[up.parent.span_id]
            assert up is recall, s.name
    searched = {s.attributes["blackboard.scope"] for s in got if s.name == "retrieval.lexical"}
    assert "agent:a1:working" in searched
    # the query is the user's data: no attribute holds it
    for s in got:
        assert not any("secret" in str(v) for v in s.attributes.values()), s.name


async def test_tracing_off_no_spans(mem: AgentMemory) -> None:
    with in_memory_spans() as spans:
        pass  # on, then off again
    await mem.store("deploy of service api failed: disk full")
    assert await mem.recall("deploy")
    assert spans.get_finished_spans() == ()
