"""End to end through real worker processes: the default hierarchy of agent a1 in team t1,
scripted memories stored via AgentMemory, every consolidation role deriving its entries."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import pytest
from workers_support import WorkerProcs

from blackboard import Blackboard, Entry, NotFound
from blackboard.keys import PartitionKeys
from memory import AgentMemory, MemoryLevel
from memory.hierarchy import install_default_hierarchy
from memory.registry import Registry
from memory.subscriptions import Trigger

pytestmark = pytest.mark.slow

N_WORKING = 45
FLUSH_S = 1.5  # age bound added to every default trigger (theirs are 10 min to an hour)


async def until(pred: Callable[[], Awaitable[Any]], limit_s: float, what: str) -> Any:
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        got = await pred()
        if got:
            return got
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {limit_s}s waiting for {what}")


async def entries(bb: Blackboard, scope: str) -> list[Entry]:
    return await bb.scope(scope).entries(limit=None)


def sources(e: Entry) -> list[str]:
    return list(e.metadata["provenance"]["sources"])


def task_tag(e: Entry) -> str | None:
    return next((t for t in e.tags if t.startswith("task:")), None)


def transformer(e: Entry) -> str | None:
    prov = e.metadata.get("provenance")
    return prov["transformer"] if isinstance(prov, dict) else None


async def store(
    mem: AgentMemory, text: str, tags: set[str], level: MemoryLevel = MemoryLevel.STM
) -> Entry:
    # Steps a few ms apart: transformers order a batch by (created_at, id).
    await asyncio.sleep(0.003)
    return await mem.store(text, level=level, tags=tags, metadata={"agent": "a1"})


async def _task(
    mem: AgentMemory, tid: str, actions: list[str], outcome: str, session: str
) -> list[Entry]:
    out = []
    for a in actions:
        tags = {f"task:{tid}", "task_kind:deploy", f"action_type:{a}", session}
        out.append(await store(mem, f"In task {tid} I ran the {a} step.", tags))
    out.append(await store(mem, f"Task {tid} ended: {outcome}.", {f"task:{tid}", outcome, session}))
    return out


async def _fill(
    mem: AgentMemory, n: int, start: int, level: MemoryLevel = MemoryLevel.STM
) -> list[Entry]:
    return [
        await mem.store(
            f"Observation {start + i}: the queue depth was {(start + i) * 7 % 31} items.",
            level=level,
            tags={"session:s9", "observation"},
            metadata={"agent": "a1"},
        )
        for i in range(n)
    ]


async def test_every_role_consolidates_through_worker_processes(
    bb: Blackboard, worker_procs: WorkerProcs
) -> None:
    h = await install_default_hierarchy(bb, "a1", teams=["t1"])
    # The default triggers (counts of 20-50, else minutes to an hour) with an age bound
    # added, so the test's partial buffers flush in seconds; same edges (ids) otherwise.
    reg = Registry(bb)
    for e in h.edges:
        await reg.save_edge(replace(e, trigger=Trigger.any_of(e.trigger, Trigger.age(FLUSH_S))))
    await reg.aclose()
    w = worker_procs.start("all")
    mem = AgentMemory(bb, agent_id="a1", teams=["t1"])
    try:
        # Phase 1, working memory: steps -> stm summaries -> team:t1.
        working = await _fill(mem, N_WORKING, 0, MemoryLevel.WORKING)

        async def summaries() -> list[Entry]:
            got = [e for e in await entries(bb, "agent:a1:stm") if transformer(e) == "summarize"]
            return got if sum(len(sources(e)) for e in got) >= N_WORKING else []

        sums = await until(summaries, 25, "stm summaries of every working entry")
        covered = [x for e in sums for x in sources(e)]
        assert sorted(covered) == sorted(e.id for e in working)  # each exactly once
        for e in sums:
            assert set(e.source) == set(sources(e))
            assert e.value["text"] and e.metadata["provenance"]["edge"].startswith("summarize")

        async def team() -> list[Entry]:
            got = await entries(bb, "team:t1")
            return got if sum(len(sources(e)) for e in got) >= len(sums) else []

        team_entries = await until(team, 25, "team:t1 entries from every summary")
        sum_ids = {e.id for e in sums}
        for e in team_entries:
            assert transformer(e) == "team"
            attr = e.metadata["attribution"]
            assert {a["entry"] for a in attr} == set(sources(e))
            assert all(a["scope"] == "agent:a1:stm" and a["agent"] == "a1" for a in attr)
            assert set(sources(e)) <= sum_ids

        # Phase 2, stm steps: three deploy tasks and a fact, then fillers (the stm -> ltm
        # edges fire on 50 steps).
        batch1: list[Entry] = []
        batch1 += await _task(mem, "t1", ["build", "test", "deploy"], "success", "session:s1")
        batch1 += await _task(mem, "t2", ["build", "test", "deploy"], "failure", "session:s2")
        batch1 += await _task(mem, "t3", ["build", "test", "deploy"], "success", "session:s3")
        batch1.append(await store(mem, "Alice lives in Paris.", {"session:s4"}))
        batch1 += await _fill(mem, 10, 1000)

        sem = bb.scope("agent:a1:ltm:semantic")

        async def paris() -> Entry | None:
            try:
                return await sem.get_by_key("fact:world_fact:entity:alice:lives_in")
            except NotFound:
                return None

        old = await until(paris, 25, "the Paris belief")
        assert old.value["object"] == "Paris"
        assert transformer(old) == "semantic"

        # Episodes, cut at the task boundaries, with their outcomes.
        # An episode a batch left open is written, then superseded by the version the
        # next batch completes (issue 26 item 2): the live versions are the whole tasks.
        async def episodes() -> dict[str, Entry]:
            eps = [e for e in await entries(bb, "agent:a1:ltm:episodic")
                   if e.superseded_by is None]
            by_task = {t: e for e in eps for t in e.tags if t in ("task:t1", "task:t2", "task:t3")}
            done = len(by_task) == 3 and all(len(sources(e)) >= 4 for e in by_task.values())
            return by_task if done else {}

        by_task = await until(episodes, 25, "the episodes of tasks t1-t3")
        for e in by_task.values():
            assert transformer(e) == "episodic"
            ids = {x.id for x in batch1 if task_tag(x) in e.tags}
            assert set(sources(e)) == ids and len(ids) == 4  # three steps and the outcome
        assert by_task["task:t1"].value["outcome"] == "success"
        assert by_task["task:t2"].value["outcome"] == "failure"

        # A procedure with its support and success rate.
        async def procedures() -> list[Entry]:
            return await entries(bb, "agent:a1:ltm:procedural")

        [proc] = await until(procedures, 25, "a procedure")
        assert proc.key == "procedure:deploy"
        v = proc.value
        assert v["steps"] == ["build", "test", "deploy"]
        assert (v["support"], v["successes"], v["failures"]) == (3, 2, 1)
        assert v["success_rate"] == pytest.approx(2 / 3, abs=1e-5)
        assert len(sources(proc)) == 12

        # Phase 3: the belief changes; the new entry supersedes the old one.
        batch2 = [await store(mem, "Alice lives in Rome.", {"session:s5"})]
        batch2 += await _fill(mem, 10, 2000)

        async def rome() -> Entry | None:
            e = await paris()
            return e if e is not None and e.value["object"] == "Rome" else None

        new = await until(rome, 25, "the Rome belief")
        assert new.id != old.id and new.key == "fact:world_fact:entity:alice:lives_in"
        was = await sem.get(old.id)  # kept, not rewritten
        assert "superseded" in was.tags and was.superseded_by == new.id
        assert was.value["object"] == "Paris"
        assert "superseded" not in new.tags
        for p in range(bb.partitions):
            assert await bb.client.xlen(PartitionKeys(p).dlq) == 0
    finally:
        await mem.aclose()
    assert worker_procs.terminate(w) == 0
