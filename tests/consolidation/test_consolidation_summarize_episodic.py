"""summarize and episodic on crafted batches."""

from __future__ import annotations

import random

import numpy as np

from consolidation import TransformContext, get_transformer
from consolidation.episodic import split_episodes
from tests.consolidation.cons_support import MIN, T0, make_entry

CTX = TransformContext(
    "edge-sum", "agent:a1:stm", params={"budget": 24, "redundancy": 0.9}, now_ms=T0
)

S1 = "The database migration started at noon."
S2 = "The database migration failed on the orders table."
S4 = "We retried the database migration on the orders table and it succeeded."


def _batch() -> list:
    return [
        make_entry("w1", {"text": S1 + " I had coffee."}, at=0, tags={"db"}),
        make_entry("w2", S2, at=1, tags={"db", "error"}, importance=0.9),
        make_entry("w3", {"content": "Weather looks sunny."}, at=2, tags={"chat"}),
        make_entry("w4", S4, at=3, tags={"db"}),
    ]


async def test_summary_picks_central_sentences_in_order() -> None:
    [d] = await get_transformer("summarize")(_batch(), CTX)
    # S2 and S4 share most content words with the rest: they are the most central and
    # take 9 + 13 = 22 tokens; no other sentence fits the 2 tokens left (S1 needs 7).
    assert d.value["sentences"] == [S2, S4]
    assert d.value["text"] == f"{S2} {S4}"
    assert d.value["start_ms"] == T0 and d.value["end_ms"] == T0 + 3 * MIN
    assert d.metadata["tokens"] == 22 and d.metadata["method"] == "lexrank-tfidf"
    assert d.tags == {"db", "error", "chat", "summary"}  # the union, marked as a summary
    assert d.importance == 0.9
    assert d.sources == ("w1", "w2", "w3", "w4")


async def test_summary_with_embeddings_and_budget() -> None:
    vocab = [
        "database",
        "migration",
        "orders",
        "table",
        "failed",
        "retried",
        "succeeded",
        "coffee",
        "weather",
    ]

    def embed(texts: list[str]) -> np.ndarray:
        return np.array([[t.lower().count(w) + 0.01 for w in vocab] for t in texts])

    [d] = await get_transformer("summarize")(
        _batch(),
        TransformContext(
            "e", "s", params={"budget": 24, "redundancy": 0.999}, similarity=embed, now_ms=T0
        ),
    )
    assert d.metadata["method"] == "lexrank-embedding"
    assert d.value["sentences"] == [S2, S4]
    # A budget below the shortest central sentence truncates the best one.
    [d] = await get_transformer("summarize")(
        _batch(), TransformContext("e", "s", params={"budget": 3}, now_ms=T0)
    )
    assert d.metadata["tokens"] <= 4 and d.value["text"].endswith("…")


async def test_summary_is_deterministic_under_shuffle() -> None:
    a = await get_transformer("summarize")(_batch(), CTX)
    b = _batch()
    random.Random(3).shuffle(b)
    c = await get_transformer("summarize")(b, CTX)
    assert a == c
    assert a[0].entry_id("edge-sum", "agent:a1:stm") == c[0].entry_id("edge-sum", "agent:a1:stm")


def _episodes_batch() -> list:
    return [
        make_entry("x1", "open the ticket", at=0, tags={"task:t1"}, agent="a1"),
        make_entry("x2", {"text": "fix the null check"}, at=5, tags={"task:t1", "agent:bob"}),
        make_entry("x3", "deploy the fix", at=10, tags={"task:t1", "success"}),
        make_entry("x4", "start the weekly report", at=12, task="t2"),
        make_entry("x5", "finish the report", at=60, tags={"task:t2"}, outcome="failed"),
        make_entry("x6", "note to self", at=61),
    ]


async def test_episodes_cut_at_task_change_and_gap() -> None:
    ctx = TransformContext("edge-ep", "agent:a1:ltm:episodic", now_ms=T0)
    out = await get_transformer("episodic")(_episodes_batch(), ctx)
    assert [d.sources for d in out] == [("x1", "x2", "x3"), ("x4",), ("x5", "x6")]
    first, second, third = (d.value for d in out)
    # actors are authors (the scope's owner); the tag naming bob is kept as a claim
    assert first["task"] == "t1" and first["actors"] == ["a1"]
    assert out[0].metadata["claimed_actors"] == ["bob"]
    assert first["steps"] == ["open the ticket", "fix the null check", "deploy the fix"]
    assert first["outcome"] == "success"
    assert (first["start_ms"], first["end_ms"]) == (T0, T0 + 10 * MIN)
    assert second["task"] == "t2" and second["outcome"] == "unknown"
    # 48 minutes of silence > 30: same task, new episode; x6 (no task) continues it.
    assert third["task"] == "t2" and third["outcome"] == "failure"
    assert "episode" in out[0].tags


async def test_episode_gap_param_and_session_boundary() -> None:
    es = _episodes_batch()
    assert len(split_episodes(es, gap_ms=60 * MIN)) == 2
    es2 = [
        make_entry("s1", "a", at=0, session="s-1"),
        make_entry("s2", "b", at=1, tags={"session:s-2"}),
    ]
    assert [len(e.entries) for e in split_episodes(es2, gap_ms=30 * MIN)] == [1, 1]


async def test_last_outcome_wins_and_shuffle_is_stable() -> None:
    es = [
        make_entry("r1", "try", at=0, tags={"task:t", "failure"}),
        make_entry("r2", "retry", at=1, tags={"task:t", "outcome:succeeded"}),
    ]
    ctx = TransformContext("e", "s", now_ms=T0)
    [d] = await get_transformer("episodic")(es, ctx)
    assert d.value["outcome"] == "success"
    b = _episodes_batch()
    random.Random(1).shuffle(b)
    assert await get_transformer("episodic")(b, ctx) == await get_transformer("episodic")(
        _episodes_batch(), ctx
    )
