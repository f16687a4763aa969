"""The optional LLM query rewriter through the LLM client protocol (a real OpenAI-style
HTTP server on 127.0.0.1), and rank fusion of rewrites; off by default."""

from __future__ import annotations

import json

import pytest

from blackboard import Blackboard
from consolidation.llm.openai import OpenAIClient
from retrieval import Retriever
from retrieval.rewrite import LLMQueryRewriter, fuse_rankings
from tests.consolidation.cons_support import ChatServer, Reply

S = "agent:a1:ltm:episodic"


def _client(s: ChatServer) -> OpenAIClient:
    return OpenAIClient(s.base_url, "test-model", backoff=0.01, timeout=2.0, max_retries=0)


async def test_rewrites_find_what_the_words_of_the_question_miss(
    bb: Blackboard, chat_server: ChatServer
) -> None:
    await bb.scope(S).write_many(["Caroline adopted a beagle named Max", "Melanie paints"])
    async with Retriever(bb, embedder=None) as plain:
        assert await plain.recall("which pet does she own", [S]) == []
    chat_server.script = [Reply(content=json.dumps({"queries": ["dog", "beagle puppy", "dog"]}))]
    async with Retriever(bb, embedder=None, rewriter=LLMQueryRewriter(_client(chat_server))) as r:
        hits = await r.recall("which pet does she own", [S])
    assert [h.entry.value for h in hits] == ["Caroline adopted a beagle named Max"]
    assert chat_server.requests[0]["messages"][-1]["content"] == "which pet does she own"


async def test_rewriter_failure_falls_back_to_the_original(
    bb: Blackboard, chat_server: ChatServer, caplog: pytest.LogCaptureFixture
) -> None:
    await bb.scope(S).write("Melanie paints sunsets")
    chat_server.script = [Reply(status=400, content="bad request")]
    async with Retriever(bb, embedder=None, rewriter=LLMQueryRewriter(_client(chat_server))) as r:
        hits = await r.recall("paints", [S])
    assert [h.entry.value for h in hits] == ["Melanie paints sunsets"]
    assert "query rewrite failed" in caplog.text


def test_retriever_has_no_rewriter_by_default(bb: Blackboard) -> None:
    assert Retriever(bb).rewriter is None


def test_fuse_rankings_sums_reciprocal_ranks() -> None:
    from blackboard.entry import Entry
    from retrieval.scoring import ScoredEntry

    def h(i: str) -> ScoredEntry:
        return ScoredEntry(Entry(id=i, scope="s", value=i), "s", None, 1.0, 1.0, 1.0, 1.0,
                           0.5, 1.0)

    out = fuse_rankings([[h("a"), h("b")], [h("b"), h("c")]], 3, rrf_k=1)
    assert [x.entry.id for x in out] == ["b", "a", "c"]
    assert out[0].score == pytest.approx(1 / 3 + 1 / 2)
