"""Feedback from use in ranking (the ``useful`` lens) and goal-aware recall
(``RetrievalContext``): the pure maths, the query model, and a recall on a real Redis."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import numpy as np
import pytest
from pydantic import ValidationError
from recall_support import CountingEmbedder

from blackboard import Blackboard, Entry
from memory import AgentMemory, MemoryQuery, RetrievalContext
from retrieval import Retriever
from retrieval.goal import blend_goal
from retrieval.scoring import ScoredEntry
from retrieval.utility import by_utility, helpful_rate, utility_factor


def _hit(i: str, score: float, uses: int = 0, helpful: int = 0) -> ScoredEntry:
    e = Entry(id=i, scope="s", value=i, uses=uses, helpful=helpful)
    return ScoredEntry(e, "s", None, None, score, 1.0, 1.0, 0.5, score)


def test_helpful_rate_is_smoothed_and_neutral_without_feedback() -> None:
    r = helpful_rate([0, 1, 1, 4, 3], [0, 1, 0, 4, 9])  # helpful > uses is clipped
    assert np.allclose(r, [0.5, 2 / 3, 1 / 3, 5 / 6, 0.8])
    f = utility_factor([0, 10], [0, 10], 0.5)
    assert f[0] == 1.0 and 1.0 < f[1] < 1.5


def test_by_utility_reorders_relevant_hits_and_leaves_no_feedback_alone() -> None:
    hits = [_hit("a", 1.0, uses=3, helpful=0), _hit("b", 0.9, uses=3, helpful=3),
            _hit("c", 0.5)]
    assert [h.entry.id for h in by_utility(hits, 0.5)] == ["b", "a", "c"]
    assert by_utility(hits, 0.0) is hits
    plain = [_hit("x", 0.8), _hit("y", 0.7)]
    assert [h.score for h in by_utility(plain, 0.5)] == [0.8, 0.7]


def test_blend_goal_biases_but_the_query_decides() -> None:
    q = [_hit("a", 2.0), _hit("b", 1.9), _hit("c", 0.4)]
    g = [_hit("b", 5.0), _hit("z", 4.0)]
    out = blend_goal(q, g, 0.3)
    assert [h.entry.id for h in out] == ["b", "a", "z", "c"]  # c at 0.14 < z at 0.24
    assert out[0].score == pytest.approx(0.7 * 0.95 + 0.3)
    assert [h.entry.id for h in blend_goal(q, [], 0.3)] == ["a", "b", "c"]


def test_query_model_takes_utility_and_context_and_refuses_nonsense() -> None:
    q = MemoryQuery(query="x", lens="useful")
    assert q.utility == 0.5
    assert MemoryQuery(query="x", lens="useful", utility=0.2).utility == 0.2  # caller wins
    c = MemoryQuery(query="x", context={"goal": "  ship it "}).context  # type: ignore[arg-type]
    assert c == RetrievalContext(goal="ship it", weight=0.3)
    for bad in ({"utility": 2}, {"utility": True}, {"context": {"goal": " "}},
                {"context": {"goal": "g", "weight": 1.5}}, {"context": {"goal": "g", "x": 1}},
                {"order": "newest", "query": None, "utility": 0.5}):
        with pytest.raises(ValidationError):
            MemoryQuery.model_validate({"query": "x", **bad})


@pytest.fixture()
async def mem(bb: Blackboard) -> AsyncIterator[AgentMemory]:
    r = Retriever(bb, embedder=CountingEmbedder())
    async with AgentMemory(bb, "a1", teams=["t1"], retriever=r) as m:
        yield m
    await r.aclose()


async def test_useful_lens_and_goal_move_recall(mem: AgentMemory) -> None:
    texts = ["deploy step one: build", "deploy step two: test", "deploy step six: push"]
    ids = []
    for t in texts:
        ids.append((await mem.store(t)).id)
        await asyncio.sleep(0.003)
    base = [h.entry.id for h in await mem.recall("deploy step")]
    assert set(base) == set(ids)
    top, second = base[0], base[1]
    for _ in range(3):  # one agent's verdict counts once however often it is given
        await mem.feedback([second], helpful=True)
    await mem.feedback([top], helpful=False)
    assert [h.entry.id for h in await mem.recall("deploy step")] == base  # off by default
    useful = [h.entry.id for h in await mem.recall(MemoryQuery(query="deploy step",
                                                               lens="useful"))]
    assert useful[0] == second and useful.index(top) > 0
    goal = await mem.recall("deploy step", context=RetrievalContext(goal="push"))
    assert goal[0].entry.id == ids[2] and {h.entry.id for h in goal} == set(ids)
    with pytest.raises(ValidationError):
        await mem.recall(MemoryQuery(order="newest"), context=RetrievalContext(goal="g"))
