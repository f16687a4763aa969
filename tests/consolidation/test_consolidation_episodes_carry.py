"""episodic across batches: the last episode of a batch stays open and the next continues
it, closes it at a task change or a gap, and never counts an entry twice."""

from __future__ import annotations

from blackboard.entry import Entry
from consolidation import Draft, TransformContext, get_transformer
from consolidation.episodic import OPEN_KEY
from tests.consolidation.cons_support import T0, make_entry

CTX = TransformContext("edge-ep", "agent:a1:ltm:episodic", now_ms=T0)


def _held(d: Draft, eid: str) -> Entry:
    """The entry an open episode's draft becomes once written (read back by key)."""
    return Entry(id=eid, scope=CTX.target_scope, value=d.value, key=d.key,
                 metadata=dict(d.metadata), source=d.sources, tags=d.tags | {"superseded"},
                 importance=d.importance)


def _ctx(held: Entry) -> TransformContext:
    return TransformContext(CTX.edge, CTX.target_scope, existing={OPEN_KEY: held}, now_ms=T0)


T1 = [make_entry(f"a{i}", f"step {i} of t1", at=i, tags={"task:t1"}) for i in range(3)]
T1_MORE = [make_entry("a3", "step 3 of t1", at=3, tags={"task:t1", "failure"}),
           make_entry("a4", "step 4 of t1", at=4, tags={"task:t1", "success"})]
T2 = [make_entry("b0", "step 0 of t2", at=5, tags={"task:t2"})]


async def test_last_episode_is_open_and_keyed() -> None:
    [d] = await get_transformer("episodic")(T1, CTX)
    assert d.key == OPEN_KEY and d.value["open"] is True and d.metadata["open"] is True
    assert d.supersedes is None and d.value["outcome"] == "unknown"


async def test_next_batch_continues_the_open_episode_then_closes_it() -> None:
    ep = get_transformer("episodic")
    [first] = await ep(T1, CTX)
    closed, opened = await ep(T1_MORE + T2, _ctx(_held(first, "open-1")))
    assert closed.key is None and closed.value["open"] is False
    assert closed.sources == ("a0", "a1", "a2", "a3", "a4")
    assert closed.value["steps"] == [f"step {i} of t1" for i in range(5)]
    assert closed.value["outcome"] == "success"  # the last reported outcome wins
    assert (closed.value["start_ms"], closed.value["task"]) == (T0, "t1")
    assert "superseded" not in closed.tags and "episode" in closed.tags
    assert opened.key == OPEN_KEY and opened.sources == ("b0",)
    assert opened.supersedes == "open-1"


async def test_a_gap_closes_the_open_episode_as_it_stood() -> None:
    ep = get_transformer("episodic")
    [first] = await ep(T1, CTX)
    late = [make_entry("a9", "t1 again, much later", at=200, tags={"task:t1"})]
    closed, opened = await ep(late, _ctx(_held(first, "open-1")))
    assert closed.sources == ("a0", "a1", "a2") and closed.value["open"] is False
    assert opened.sources == ("a9",) and opened.value["open"] is True


async def test_a_batch_inside_one_task_keeps_it_open_and_skips_redelivered_entries() -> None:
    ep = get_transformer("episodic")
    [first] = await ep(T1, CTX)
    [d] = await ep([T1[-1], *T1_MORE], _ctx(_held(first, "open-1")))  # a2 delivered again
    assert d.key == OPEN_KEY and d.sources == ("a0", "a1", "a2", "a3", "a4")
    assert len(d.value["steps"]) == 5 and d.supersedes == "open-1"
    assert await ep([T1[-1]], _ctx(_held(first, "open-1"))) == []


async def test_an_entry_without_task_continues_the_open_episode() -> None:
    ep = get_transformer("episodic")
    [first] = await ep(T1, CTX)
    note = [make_entry("n1", "a note", at=3), *T2]
    closed, _ = await ep(note, _ctx(_held(first, "open-1")))
    assert closed.sources == ("a0", "a1", "a2", "n1")
