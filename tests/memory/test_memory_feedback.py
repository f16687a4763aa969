"""Confirm and correct a belief: evidence with provenance, consolidated like any fact."""

from __future__ import annotations

import pytest

from blackboard import AccessDenied, Blackboard, Entry, NotFound
from memory import AgentMemory, InvalidClaim, MemoryLevel, MemorySubscription, NotABelief
from workers.transform import TransformBridge

SEM = "agent:a1:ltm:semantic"
EDGE = MemorySubscription("agent:*:stm", "agent:{1}:ltm:semantic", "semantic")


async def consolidate(bb: Blackboard, done: set[str] | None = None) -> Entry:
    """One run of the stm -> semantic edge over the stm entries not yet in ``done`` (the
    new events a worker's batch holds)."""
    done = set() if done is None else done
    stm = [e for e in await bb.scope("agent:a1:stm").entries(limit=None, newest_first=False)
           if e.id not in done]
    done.update(e.id for e in stm)
    reqs = await TransformBridge(bb)(EDGE, SEM, stm, bb.now_ms())
    await bb.scope(SEM).write_many(reqs)
    return await bb.scope(SEM).get_by_key("fact:world_fact:entity:acme-corp:lives_in")


async def test_confirm_and_correct_are_evidence_that_moves_the_belief(bb: Blackboard) -> None:
    async with AgentMemory(bb, "a1", teams=["t1"], default_retriever=False) as mem:
        for town in ("Springfield", "Springfield"):
            await mem.store(f"Acme Corp lives in {town}.", MemoryLevel.STM)
        seen: set[str] = set()
        first = await consolidate(bb, seen)
        assert first.value["object"] == "Springfield"

        fb = await mem.confirm(first.id)
        assert fb.scope == "agent:a1:stm" and fb.author == "a1"  # who (and created_at: when)
        assert fb.metadata["feedback"] == "confirm" and fb.metadata["belief"] == first.id
        assert (await bb.scope(SEM).get(first.id)).value == first.value  # never rewritten
        confirmed = await consolidate(bb, seen)
        assert confirmed.id != first.id and confirmed.value["supersedes"] == first.id
        comps = confirmed.value["confidence_components"]
        assert comps["operator_confirmed"] == 1
        assert confirmed.value["confidence"] > first.value["confidence"]

        # The user corrects it twice (2 mentions and a confirmation weigh 4, each correction
        # 2, and a tie goes to the newest): the belief is superseded by the corrected claim.
        await mem.correct(confirmed.id, "Shelbyville")
        fb2 = await mem.correct(confirmed.id, "Acme Corp lives in Shelbyville.")
        assert fb2.metadata["object"] == "Shelbyville" and fb2.metadata["feedback"] == "correct"
        now = await consolidate(bb, seen)
        assert now.value["object"] == "Shelbyville" and now.value["revision"] == "changed"
        assert now.value["supersedes"] == confirmed.id
        links = {ln["entry"]: ln for ln in now.value["evidence"]}
        assert links[fb2.id]["author"] == "a1" and links[fb2.id]["stance"] == "contradict"


async def test_bad_feedback_is_refused_and_writes_nothing(bb: Blackboard) -> None:
    async with AgentMemory(bb, "a1", teams=["t1"], default_retriever=False) as mem:
        note = await mem.store("Acme Corp lives in Springfield.", MemoryLevel.STM)
        belief = await consolidate(bb)
        other = await bb.scope("agent:a2:ltm:semantic").write(belief.value, key="k")
        before = await bb.scope("agent:a1:stm").count()
        with pytest.raises(NotABelief, match=r"belief_id: entry .* is not a belief"):
            await mem.correct(note.id, "Shelbyville")
        with pytest.raises(NotABelief, match="not an entry id"):
            await mem.confirm("../../x")
        with pytest.raises(NotFound, match="no belief"):
            await mem.confirm("0" * 26)
        with pytest.raises(NotFound):  # another agent's belief: not among what a1 reads
            await mem.confirm(other.id)
        with pytest.raises(AccessDenied, match="agent:a2:ltm:semantic"):
            await mem.confirm(other.id, scope="agent:a2:ltm:semantic")
        with pytest.raises(InvalidClaim, match="claim: 'Globex lives in Paris' is not about"):
            await mem.correct(belief.id, "Globex lives in Paris")
        with pytest.raises(InvalidClaim, match="non-empty"):
            await mem.correct(belief.id, "  ")
        with pytest.raises(InvalidClaim, match="restates"):
            await mem.correct(belief.id, "springfield")
        with pytest.raises(InvalidClaim, match="at most"):
            await mem.correct(belief.id, "x" * 1001)
        assert await bb.scope("agent:a1:stm").count() == before


def test_a_correction_reads_as_the_new_value_or_a_statement_of_the_same_slot() -> None:
    from consolidation.feedback import read_claim

    b = {"subject": "Acme Corp", "predicate": "lives_in", "object": "Springfield"}
    assert read_claim(b, "Shelbyville")["object"] == "Shelbyville"  # type: ignore[index]
    got = read_claim(b, "Acme Corp does not live in Springfield.")
    assert got is not None and (got["object"], got["negated"]) == ("Springfield", True)
    assert got["statement"] == "Acme Corp does not live in Springfield"
    assert read_claim(b, "Acme Corp lives in Shelbyville")["negated"] is False  # type: ignore[index]
    assert read_claim(b, "Globex lives in Paris") is None  # another subject
    assert read_claim(b, "Acme Corp uses Slack") is None  # another predicate
    assert read_claim(b, " . ") is None
