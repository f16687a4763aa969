"""Feedback from use (issue 27, item 4): per-agent counts, reinforcement counted once per
agent, contradicting evidence against a misleading belief, refusals that write nothing."""

from __future__ import annotations

import pytest
from test_memory_feedback import consolidate

from blackboard import AccessDenied, Blackboard, InvalidArgument, NotFound
from memory import AgentMemory, MemoryLevel


async def test_counts_are_per_agent_and_reinforcement_once_per_agent(bb: Blackboard) -> None:
    async with (AgentMemory(bb, "a1", teams=["t1"], default_retriever=False) as a1,
                AgentMemory(bb, "a2", teams=["t1"], default_retriever=False) as a2):
        e = await a1.store("the deploy needs the staging key", team="t1", level=None)
        r = await a1.feedback([e.id], helpful=True)
        v = r.verdicts[0]
        assert (v.changed, v.reinforced, v.uses, v.helpful) == (True, True, 1, 1)
        assert r.evidence == ()
        got = await bb.scope("team:t1").get(e.id)
        assert (got.uses, got.helpful, got.reinforcements, got.reinforced_by) == (1, 1, 1,
                                                                                ("a1",))
        # a1 repeating itself changes nothing: no pumping
        for _ in range(5):
            v = (await a1.feedback(e.id, helpful=True)).verdicts[0]
            assert (v.changed, v.reinforced, v.uses, v.helpful) == (False, False, 1, 1)
        again = await bb.scope("team:t1").get(e.id)
        assert (again.reinforcements, again.version) == (1, got.version)
        # a2 finds it misleading: one more use, not helpful; a1 changes its mind
        v = (await a2.feedback([e.id], helpful=False)).verdicts[0]
        assert (v.uses, v.helpful, v.reinforced) == (2, 1, False)
        v = (await a1.feedback([e.id], helpful=False)).verdicts[0]
        assert (v.uses, v.helpful) == (2, 0)
        # and back: a1 already reinforced it once, so no second reinforcement
        v = (await a1.feedback([e.id], helpful=True)).verdicts[0]
        assert (v.uses, v.helpful, v.reinforced) == (2, 1, False)
        assert (await bb.scope("team:t1").get(e.id)).reinforcements == 1
        report = await bb.check()  # the indexes (evict schedule) agree with the entries
        assert report.ok, report.drift


async def test_misleading_belief_gets_contradicting_weight_once(bb: Blackboard) -> None:
    async with AgentMemory(bb, "a1", teams=["t1"], default_retriever=False) as mem:
        for _ in range(2):
            await mem.store("Acme Corp lives in Springfield.", MemoryLevel.STM)
        seen: set[str] = set()
        first = await consolidate(bb, seen)
        assert first.value["confidence_components"]["contradiction_weight"] == 0
        r = await mem.feedback([first.id], helpful=False)
        assert len(r.evidence) == 1
        ev = r.evidence[0]
        assert ev.scope == "agent:a1:stm" and ev.author == "a1"
        assert ev.metadata["feedback"] == "misleading" and ev.metadata["negated"] is True
        again = await mem.feedback([first.id], helpful=False)  # same evidence entry: once
        assert again.evidence[0].id == ev.id
        assert await bb.scope("agent:a1:stm").count() == 3
        now = await consolidate(bb, seen)
        comps = now.value["confidence_components"]
        assert comps["contradiction_weight"] > 0
        assert now.value["confidence"] < first.value["confidence"]
        links = {ln["entry"]: ln for ln in now.value["evidence"]}
        assert links[ev.id]["stance"] == "contradict"


async def test_bad_feedback_is_refused_and_writes_nothing(bb: Blackboard) -> None:
    async with AgentMemory(bb, "a1", teams=["t1"], default_retriever=False) as mem:
        mine = await mem.store("mine", MemoryLevel.STM)
        other = await bb.scope("agent:a2:stm").write("a2's own")
        shared = await bb.scope("collective").write("everyone reads this")
        before = {s: await bb.scope(s).count() for s in ("agent:a1:stm", "agent:a2:stm")}
        cases: list[tuple[type[Exception], str, object, object]] = [
            (InvalidArgument, "entry_ids: at least one", [], True),
            (InvalidArgument, "is not an entry id", ["../x"], True),
            (InvalidArgument, "entry_ids: a list", 42, True),
            (InvalidArgument, "at most 100", [f"id{i}" for i in range(101)], True),
            (InvalidArgument, "helpful: must be true or false", [mine.id], "yes"),
            (InvalidArgument, "helpful: must be true or false", [mine.id], 1),
            (NotFound, "no entry '0000", [mine.id, "0" * 26], True),
            (NotFound, "no entry", [mine.id, other.id], False),  # foreign: not told apart
            (AccessDenied, "may read but not write", [mine.id, shared.id], True),
        ]
        for exc, match, ids, helpful in cases:
            with pytest.raises(exc, match=match):
                await mem.feedback(ids, helpful)  # type: ignore[arg-type]
        for s, n in before.items():
            assert await bb.scope(s).count() == n
        for e in (mine, other):
            got = await bb.scope(e.scope).get(e.id)
            assert (got.uses, got.reinforcements, got.version) == (0, 0, e.version)


async def test_feedback_on_the_cluster(cbb: Blackboard) -> None:
    """One script per scope, every key it touches in the scope's slot: the same on a
    3-master cluster, entries of several partitions in one call."""
    async with (AgentMemory(cbb, "a1", teams=["t1"], default_retriever=False) as a1,
                AgentMemory(cbb, "a2", teams=["t1"], default_retriever=False) as a2):
        es = [await a1.store("stm note", MemoryLevel.STM),
              await a1.store("team note", team="t1", level=None),
              await a1.store("semantic note", MemoryLevel.SEMANTIC)]
        assert len({cbb.scope(e.scope).partition for e in es}) > 1
        r = await a1.feedback([e.id for e in es], helpful=True)
        assert [(v.entry_id, v.uses, v.reinforced) for v in r.verdicts] == [
            (e.id, 1, True) for e in es]
        v = (await a2.feedback([es[1].id], helpful=False)).verdicts[0]
        assert (v.uses, v.helpful) == (2, 1)


async def test_many_ids_in_one_call(bb: Blackboard) -> None:
    async with AgentMemory(bb, "a1", teams=["t1"], default_retriever=False) as mem:
        es = [await mem.store(f"note {i}", MemoryLevel.STM if i % 2 else MemoryLevel.WORKING)
              for i in range(40)]
        r = await mem.feedback([e.id for e in es] + [es[0].id], helpful=True)  # a repeat: once
        assert [v.entry_id for v in r.verdicts] == [e.id for e in es]
        assert all(v.uses == 1 and v.reinforced for v in r.verdicts)
