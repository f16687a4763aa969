"""``AgentMemory.recall`` through the retrieval layer on a real Redis: every filter, levels,
lenses, access rules, the default retriever and its BM25 fallback."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest
from recall_support import CountingEmbedder

import retrieval.embedders.base as emb_base
from blackboard import AccessDenied, Blackboard
from memory import AgentMemory, MemoryLevel, MemoryQuery, ScoredEntry, TagFilter
from retrieval import Retriever


@pytest.fixture()
async def mem(bb: Blackboard) -> AsyncIterator[AgentMemory]:
    r = Retriever(bb, embedder=CountingEmbedder())
    async with AgentMemory(bb, "a1", teams=["t1"], retriever=r) as m:
        yield m
    await r.aclose()


async def _seed(mem: AgentMemory) -> dict[str, str]:
    ids = {}
    async def put(name: str, text: str, **kw: object) -> None:
        e = await mem.store(text, **kw)  # type: ignore[arg-type]
        ids[name] = e.id
        await asyncio.sleep(0.003)  # distinct created_at
    await put("deploy_fail", "deploy of service api failed: disk full", tags={"action", "failure"})
    await put("deploy_ok", "deploy of service api succeeded", tags={"action", "success"})
    await put("note", "remember to rotate the api keys", tags={"todo"}, key="todo.keys")
    await put("fact", "Alice prefers green tea", level=MemoryLevel.SEMANTIC, tags={"fact"},
              key="user.alice.tea")
    await put("proc", "to deploy: build, test, push, restart", level=MemoryLevel.PROCEDURAL,
              tags={"procedure"})
    await put("team", "team decided the api deploy freeze is friday", level=None, team="t1",
              tags={"decision"})
    await put("stm", "summary: api deploys today, one failure", level=MemoryLevel.STM,
              tags={"summary", "failure"}, importance=0.9)
    return ids


def _ids(hits: list[ScoredEntry]) -> set[str]:
    return {h.entry.id for h in hits}


async def test_text_recall_returns_scored_entries_best_first(mem: AgentMemory) -> None:
    ids = await _seed(mem)
    hits = await mem.recall("what failed in the deploy?")
    assert hits and all(isinstance(h, ScoredEntry) for h in hits)
    assert hits[0].entry.id == ids["deploy_fail"]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert ids["team"] in _ids(hits)  # team scope merged in, scores comparable
    assert len(await mem.recall("deploy", max_results=2)) == 2


async def test_every_filter_through_recall(mem: AgentMemory) -> None:
    ids = await _seed(mem)
    q = "deploy api"

    async def got(**kw: object) -> set[str]:
        return _ids(await mem.recall(MemoryQuery(**kw)))  # type: ignore[arg-type]

    assert await got(query=q, tag_filter=TagFilter(all_of={"action", "failure"})) == {
        ids["deploy_fail"]}
    assert await got(query=q, tag_filter=TagFilter(any_of={"success", "decision"})) == {
        ids["deploy_ok"], ids["team"]}
    no_fail = await got(query=q, tag_filter=TagFilter(none_of={"failure"}))
    assert ids["deploy_fail"] not in no_fail and ids["stm"] not in no_fail
    assert ids["deploy_ok"] in no_fail
    # no text: filters alone
    assert await got(tag_filter=TagFilter(all_of={"fact"})) == {ids["fact"]}
    assert await got(key_pattern="user.*") == {ids["fact"]}
    assert await got(query="api", key_pattern="todo.*") == {ids["note"]}
    everything = await mem.recall(MemoryQuery(max_results=50))
    created = {h.entry.id: h.entry.created_at for h in everything}
    lo, hi = created[ids["deploy_ok"]], created[ids["fact"]]
    assert await got(time_range=(lo, hi)) == {ids["deploy_ok"], ids["note"], ids["fact"]}
    assert await got(query=q, time_range=(lo, hi), tag_filter=TagFilter(any_of={"action"})) == {
        ids["deploy_ok"]}
    assert await got(min_strength=0.5) == set(ids.values())
    assert await got(min_strength=1.5) == set()
    # levels (names or scope suffixes) and scopes
    assert await got(query=q, levels=["semantic", "ltm:procedural"]) == {ids["proc"]}
    assert await got(levels=["stm"]) == {ids["stm"]}
    assert await got(query=q, scopes=["team:t1"]) == {ids["team"]}
    assert await got(scopes=["agent:a1:working"], tag_filter=TagFilter(any_of={"todo"})) == {
        ids["note"]}
    # combined: text + tags + level + time
    assert await got(query=q, levels=["working"], tag_filter=TagFilter(none_of={"success"}),
                     time_range=(0, hi)) == {ids["deploy_fail"], ids["note"]}


async def test_lenses(mem: AgentMemory) -> None:
    ids = await _seed(mem)
    assert _ids(await mem.recall(MemoryQuery(lens="failures"))) == {ids["deploy_fail"], ids["stm"]}
    assert _ids(await mem.recall(MemoryQuery(lens="recent_actions"))) == {
        ids["deploy_fail"], ids["deploy_ok"]}
    assert _ids(await mem.recall(MemoryQuery(lens="facts_about:Alice"))) == {ids["fact"]}
    assert _ids(await mem.recall(MemoryQuery(lens="procedures"))) == {ids["proc"]}


async def test_access_rules(bb: Blackboard, mem: AgentMemory) -> None:
    async with AgentMemory(bb, "a2", teams=["t1", "t2"], default_retriever=False) as other:
        secret = await other.store("secret plan about the api deploy")
        shared = await other.store("team t1 note on the api deploy", level=None, team="t1")
        t2 = await other.store("team t2 note on the api deploy", level=None, team="t2")
    wisdom = await bb.scope("collective").write("collective wisdom: deploy on tuesdays")
    mine = await mem.store("my own api deploy note")
    hits = _ids(await mem.recall(MemoryQuery(query="api deploy", max_results=50)))
    assert secret.id not in hits and t2.id not in hits
    assert {shared.id, wisdom.id, mine.id} <= hits
    assert wisdom.id in _ids(await mem.recall("tuesdays"))
    with pytest.raises(AccessDenied, match="agent:a2:working"):
        await mem.recall(MemoryQuery(query="secret", scopes=["agent:a2:working"]))
    with pytest.raises(AccessDenied, match="team:t2"):
        await mem.recall(MemoryQuery(query="note", scopes=["team:t2"]))
    # the engine never even indexed the other agent's scopes
    assert mem.retriever is not None
    assert not any(s.startswith("agent:a2") for s in mem.retriever.engine.scopes())  # type: ignore[attr-defined]


async def test_explain_logs_breakdown(mem: AgentMemory, caplog: pytest.LogCaptureFixture) -> None:
    await _seed(mem)
    with caplog.at_level(logging.INFO, logger="retrieval.recall"):
        hits = await mem.recall("deploy failed", explain=True)
    lines = [r.getMessage() for r in caplog.records if r.name == "retrieval.recall"]
    assert len(lines) == len(hits) and "fused=" in lines[0] and "bm25=" in lines[0]


async def test_default_retriever_is_made_lazily_and_closed(bb: Blackboard) -> None:
    async with AgentMemory(bb, "a1") as m:
        assert m.retriever is None
        await m.store("the cat sat on the mat", tags={"obs"})
        hits = await m.recall("where did the cat sit?")
        assert hits[0].entry.value == "the cat sat on the mat"
        assert isinstance(m.retriever, Retriever)
        if m.retriever.engine.embedder is not None:  # MiniLM installed: hybrid
            assert hits[0].dense is not None
        follower = m.retriever.follower
    assert m.retriever is None and follower._stopped


async def test_no_dense_model_degrades_to_bm25_with_one_warning(
    bb: Blackboard, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import retrieval.embedders.minilm as minilm

    monkeypatch.setattr(minilm, "minilm_available", lambda: "model file not found (test)")
    monkeypatch.setattr(emb_base, "_warned", False)
    with caplog.at_level(logging.WARNING):
        for agent in ("a1", "a2"):
            async with AgentMemory(bb, agent) as m:
                await m.store("bananas are yellow", tags={"fact"})
                hits = await m.recall("yellow bananas")
                assert [h.entry.value for h in hits] == ["bananas are yellow"]
                assert hits[0].dense is None and hits[0].bm25 is not None
                assert await m.recall(MemoryQuery(tag_filter=TagFilter(all_of={"fact"})))
    warnings = [r for r in caplog.records if "semantic recall disabled" in r.getMessage()]
    assert len(warnings) == 1 and "BM25" in warnings[0].getMessage()
