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


def _steps(task: str, kind: str, actions: list[str], fail_last: bool, at: int,
           error: str | None = None) -> list:
    base = {f"task:{task}", f"task_kind:{kind}"}
    out = [make_entry(f"{task}-p", f"a1 plans {kind} task {task}.", at=at,
                      tags=base | {"plan"})]
    for i, act in enumerate(actions):
        bad = fail_last and i == len(actions) - 1
        meta = {"error": error} if bad and error else {}
        out.append(make_entry(f"{task}-{i}", f"a1 ran {act} for {task}: "
                              f"{'failed' if bad else 'done'}.", at=at + 1 + i,
                              tags=base | {f"action_type:{act}", "failure" if bad else "success"},
                              **meta))
    return out


async def test_steps_roll_up_a_line_per_task_and_facts_are_kept() -> None:
    """Issue 26 item 1: the steps are said once per task (what, how many, how it ended,
    where it failed); a fact stated among them is kept word for word."""
    fact = "Globex prefers email invoices."
    batch = [*_steps("t1", "invoice", ["fetch", "post"], True, 0, "TimeoutError: ledger"),
             make_entry("f1", fact, at=5, tags={"fact", "task:t1"}),
             *_steps("t2", "support", ["read", "reply"], False, 10)]
    ctx = TransformContext("edge-sum", "agent:a1:stm", now_ms=T0)
    [d] = await get_transformer("summarize")(random.Random(3).sample(batch, len(batch)), ctx)
    assert d.value["sentences"] == [
        "a1 handled invoice task t1: 2 steps (fetch, post), failed at post (TimeoutError: "
        "ledger).",
        "a1 handled support task t2: 2 steps (read, reply), done.",
        fact]
    assert d.metadata["method"] == "rollup+lexrank-tfidf"
    assert set(d.sources) == {e.id for e in batch}


async def test_many_tasks_tally_in_one_line_and_keep_their_failures() -> None:
    batch = []
    for i in range(30):
        batch += _steps(f"t{i}", "invoice" if i % 2 else "reconcile",
                        ["load", "match", "write"], i in (7, 20), i * 10)
    ctx = TransformContext("edge-sum", "agent:a1:stm", params={"budget": 60}, now_ms=T0)
    [d] = await get_transformer("summarize")(batch, ctx)
    assert d.value["sentences"] == [
        "a1 handled 30 tasks (15 invoice, 15 reconcile): 28 done, 2 failed.",
        "a1 handled invoice task t7: 3 steps, failed at write.",
        "a1 handled reconcile task t20: 3 steps, failed at write."]
    assert d.metadata["tokens"] <= 60
