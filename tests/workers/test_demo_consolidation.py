"""The demo's own work (cli.demo_agents) consolidated whatever the batching: one procedure
per skill, one episode per task, none cut where a batch ended, and a replayed batch (a
crash after the write, before the trim) changes nothing.

Runs the real bridge (workers.transform) and write path over the demo's steps as stm holds
them, batch by batch as the dataflow would (the trigger decides the sizes; three are tried).
"""

from __future__ import annotations

from collections import Counter

import pytest

from blackboard import Blackboard, Entry, WriteRequest
from cli.demo_agents import PROCEDURES, script
from memory.subscriptions import MemorySubscription
from workers.transform import TransformBridge

AGENTS = ("agent1", "agent2", "agent3")
STEPS = 120  # the demo's default
EDGES = {
    "episodic": MemorySubscription("agent:*:stm", "agent:{1}:ltm:episodic", "episodic"),
    "procedural": MemorySubscription("agent:*:stm", "agent:{1}:ltm:procedural", "procedural"),
}


async def _stm(bb: Blackboard, agent: str) -> list[Entry]:
    """The agent's demo steps as stm holds them (tags as the demo's producer sets them)."""
    reqs = []
    for st in script(agent, STEPS, 7):
        tags = set(st.tags)
        if st.kind == "action" and st.action:
            tags |= {f"action_type:{st.action}", "success" if st.ok else "failure"}
        reqs.append(WriteRequest({"text": st.text, "action": st.action}, tags=tags,
                                 metadata={"agent": agent}))
    out: list[Entry] = []
    for r in reqs:  # one by one: each step its own time, as the agents wrote them
        out += await bb.scope(f"agent:{agent}:stm").write_many([r])
    return out


async def _fire(bridge: TransformBridge, bb: Blackboard, agent: str, batch: list[Entry]) -> None:
    for name, edge in EDGES.items():
        target = f"agent:{agent}:ltm:{name}"
        reqs = await bridge(edge, target, batch, max(e.created_at for e in batch))
        if reqs:
            await bb.scope(target).write_many(reqs)


def _tag(e: Entry, prefix: str) -> str:
    return next(t.split(":", 1)[1] for t in e.tags if t.startswith(prefix + ":"))


async def _live(bb: Blackboard, scope: str) -> list[Entry]:
    return [e for e in await bb.scope(scope).entries(limit=None) if "superseded" not in e.tags]


@pytest.mark.parametrize("size", [pytest.param(1, marks=pytest.mark.slow), 5, 12])
async def test_demo_work_gives_one_procedure_per_skill_and_whole_episodes(
    bb: Blackboard, size: int
) -> None:
    bridge = TransformBridge(bb)
    for agent in AGENTS:
        stm = await _stm(bb, agent)
        for i in range(0, len(stm), size):
            batch = stm[i : i + size]
            await _fire(bridge, bb, agent, batch)
            if i // size % 3 == 1:
                await _fire(bridge, bb, agent, batch)  # replayed: a crash before the trim

        procs = await _live(bb, f"agent:{agent}:ltm:procedural")
        tasks = {_tag(e, "task"): _tag(e, "task_kind") for e in stm}  # task -> kind
        kinds = set(tasks.values())
        assert kinds == set(PROCEDURES)
        # exactly one procedure per skill, its usual steps, every task of the kind counted once
        assert sorted(e.value["task_kind"] for e in procs) == sorted(kinds)
        for e in procs:
            kind = e.value["task_kind"]
            assert tuple(e.value["steps"]) == PROCEDURES[kind]
            assert e.value["support"] == sum(k == kind for k in tasks.values())
            assert e.value["successes"] + e.value["failures"] == e.value["support"]

        eps = await _live(bb, f"agent:{agent}:ltm:episodic")
        per_task = Counter(e.value["task"] for e in eps)
        assert per_task == Counter(set(tasks)), "one episode per task, none split"
        assert not [e for e in eps if len(e.value["steps"]) == 1]
        assert sum(len(e.value["steps"]) for e in eps) == len(stm)
        # the last task may go on: its episode is the one left open
        assert [e.value["task"] for e in eps if e.value["open"]] == [_tag(stm[-1], "task")]


async def test_an_updated_step_is_not_taken_again_by_step_readers(bb: Blackboard) -> None:
    """dedupe merges the demo's repeated observations into one entry and updates it: the
    update is not a new step for episodic or procedural (in the demo it made one-step
    episodes and split tasks), while other edges (semantic) still take it."""
    from blackboard import Event, EventType
    from consolidation.transformer import reads_updates
    from memory.registry import Registry
    from workers.dataflow import DataflowRunner
    from workers.edgeset import EdgeSet

    semantic = MemorySubscription("agent:*:stm", "agent:{1}:ltm:semantic", "semantic")
    edges = [*EDGES.values(), semantic]
    reg = Registry(bb)
    try:
        es = EdgeSet(reg, {e.transformer for e in edges})
        es.edges = edges
        runner = DataflowRunner(bb, "r", es, lambda *a: [],
                                updates=lambda e: reads_updates(e.transformer))
        part = bb.pending(0)
        ev = [Event(f"1-{i}", "agent:a1:stm", t, f"e{i}", 1, frozenset(), 0)
              for i, t in enumerate((EventType.WRITTEN, EventType.UPDATED))]
        keys, args = runner._match(part, "c", ev, "")
    finally:
        await reg.aclose()
    assert len(keys) == 3
    # after 6 header args, per event: id, n, then n (buffer index, item) pairs: the written
    # one goes to all three buffers, the updated one to semantic's alone
    body = args[6:]
    assert body[:2] == ["1-0", "3"]
    assert body[8:11] == ["1-1", "1", str(keys.index(part.key(semantic.id,
                                                              "agent:a1:ltm:semantic")) + 1)]
