"""Collective memory (issue 27 item 1): beliefs held by a quorum of agents, with their
pooled evidence and agents; procedures pooled over agents; below the quorum nothing is
offered as truth, now or as of then."""

from __future__ import annotations

from typing import Any

import pytest

from blackboard.entry import Entry
from consolidation import InvalidParams, TransformContext, get_transformer
from consolidation.draft import Draft
from retrieval.query import MemoryQuery
from retrieval.scoring import ScoredEntry
from retrieval.truth import current_truth
from tests.consolidation.cons_support import MIN, T0
from tests.consolidation.test_team_beliefs import KEY, agent_belief, link

PKEY = "procedure:invoice"
STEPS = ["fetch_email", "extract_fields", "validate_totals", "post_ledger"]


def ctx(existing: dict[str, Entry] | None = None, **params: Any) -> TransformContext:
    return TransformContext("edge-col", "collective", params=params,
                            existing=existing or {}, now_ms=T0 + 20 * MIN)


def stored(d: Draft, eid: str, at: int = 20) -> Entry:
    return Entry(id=eid, scope="collective", value=d.value, tags=d.tags,
                 metadata=d.full_metadata(), key=d.key, created_at=T0 + at * MIN)


async def beliefs(batch: list[Entry], existing: dict[str, Entry] | None = None,
                  **params: Any) -> list[Draft]:
    return await get_transformer("collective_beliefs")(batch, ctx(existing, **params))


def said(agent: str, town: str, at: int, eid: str) -> Entry:
    return agent_belief(f"b-{eid}", agent, town, [link(eid, agent, town, at)], at=at)


async def test_one_agent_proposes_a_second_promotes_with_pooled_evidence() -> None:
    [alone] = await beliefs([said("agent1", "Springfield", 1, "e1")])
    assert alone.value["status"] == alone.metadata["status"] == "proposed"
    assert alone.metadata["promoted"] is False and "proposed" in alone.tags
    assert {"collective", "fact"} <= alone.tags and "team_belief" not in alone.tags
    first = stored(alone, "c1")
    [both] = await beliefs([said("agent2", "Springfield", 3, "e2")], {KEY: first})
    assert both.value["status"] == "active" and both.metadata["promoted"] is True
    assert both.value["revision"] == "promoted" and both.supersedes == "c1"
    assert both.metadata["agents"] == ["agent1", "agent2"]
    assert both.value["confidence_components"]["agents"] == 2
    # pooled evidence: the supporting entries of both agents, each with its agent
    assert {(ln["entry"], ln["agent"]) for ln in both.value["evidence"]} == {
        ("e1", "agent1"), ("e2", "agent2")}
    assert both.metadata["valid_from_ms"] == T0 + 3 * MIN  # true collectively from then
    # a replay of agent2's belief (crash before the trim) changes nothing
    assert await beliefs([said("agent2", "Springfield", 3, "e2")], {KEY: stored(both, "c2")}) == []


async def test_a_changed_belief_never_stays_collective_truth() -> None:
    held = stored((await beliefs([said("agent1", "Springfield", 1, "e1"),
                                  said("agent2", "Springfield", 2, "e2")]))[0], "c1")
    assert held.metadata["promoted"] is True
    # agent1 hears of the move: 1 against 1, the most recent view wins, below the quorum
    [tie] = await beliefs([said("agent1", "Shelbyville", 5, "e3")], {KEY: held})
    assert tie.value["object"] == "Shelbyville" and tie.value["revision"] == "changed"
    assert tie.metadata["status"] == "proposed" and tie.supersedes == "c1"
    # agent2 follows: the new town is collective truth, with both agents behind it
    [moved] = await beliefs([said("agent2", "Shelbyville", 6, "e4")], {KEY: stored(tie, "c2")})
    assert moved.value["status"] == "active" and moved.value["revision"] == "promoted"
    assert moved.metadata["agents"] == ["agent1", "agent2"]


async def test_losing_the_quorum_on_the_same_claim_demotes() -> None:
    three = [said(a, "Paris", i, f"p{i}") for i, a in enumerate(("a1", "a2", "a3"), 1)]
    held = stored((await beliefs(three, quorum=3))[0], "c1")
    assert held.metadata["promoted"] is True and held.metadata["quorum"] == 3
    [d] = await beliefs([said("a3", "Rome", 9, "r1")], {KEY: held}, quorum=3)
    assert d.value["object"] == "Paris" and d.value["revision"] == "demoted"
    assert d.value["status"] == "proposed" and d.metadata["valid_from_ms"] == T0 + 9 * MIN


def test_quorum_must_be_positive() -> None:
    import asyncio

    with pytest.raises(InvalidParams, match="quorum"):
        asyncio.run(beliefs([said("a1", "Paris", 1, "p1")], quorum=0))


def hit(e: Entry) -> ScoredEntry:
    return ScoredEntry(e, e.scope, None, None, 1.0, 1.0, 1.0, 0.5, 1.0)


async def test_recall_never_gives_a_proposed_version_as_truth_now_or_as_of() -> None:
    from datetime import UTC, datetime

    p = (await beliefs([said("agent1", "Springfield", 1, "e1")]))[0]
    proposed = stored(p, "c1", at=1)
    a = (await beliefs([said("agent2", "Springfield", 4, "e2")], {KEY: proposed}))[0]
    active = stored(a, "c2", at=4)
    gone = Entry(id=proposed.id, scope="collective", value=proposed.value,
                 tags=proposed.tags | {"superseded"}, key=KEY, created_at=proposed.created_at,
                 metadata={**proposed.metadata, "status": "superseded", "superseded_by": "c2"},
                 superseded_by="c2")
    now = T0 + 30 * MIN
    assert [h.entry.id for h in current_truth([hit(proposed)], MemoryQuery(), now)] == []
    assert [h.entry.id for h in current_truth([hit(gone), hit(active)], MemoryQuery(),
                                              now)] == ["c2"]

    def as_of(minute: int) -> list[str]:
        q = MemoryQuery(as_of=datetime.fromtimestamp((T0 + minute * MIN) / 1000, UTC))
        return [h.entry.id for h in current_truth([hit(gone), hit(active)], q, now)]

    assert as_of(2) == []  # held by agent1 alone then: no collective truth
    assert as_of(5) == ["c2"]


def procedure(eid: str, agent: str, version: int, steps: list[str], ok: int, bad: int,
              status: str = "learned", at: int = 10) -> Entry:
    value = {"task_kind": "invoice", "status": status, "steps": steps,
             "support": ok + bad, "successes": ok, "failures": bad,
             "variants": [{"steps": steps, "support": ok + bad, "successes": ok,
                           "failures": bad}]}
    return Entry(id=eid, scope=f"agent:{agent}:ltm:procedural", value=value,
                 tags=frozenset({"procedure"}), key=PKEY, created_at=T0 + at * MIN,
                 metadata={"kind": "procedure", "canonical_key": PKEY,
                           "procedure_version": version, "status": status})


async def procedures(batch: list[Entry], existing: dict[str, Entry] | None = None,
                     **params: Any) -> list[Draft]:
    return await get_transformer("collective_procedures")(batch, ctx(existing, **params))


async def test_procedures_pool_success_rates_across_agents() -> None:
    [d] = await procedures([procedure("p1", "agent1", 3, STEPS, 3, 1),
                            procedure("p2", "agent2", 2, STEPS, 4, 0),
                            procedure("p3", "agent3", 1, STEPS[:2], 1, 0, "candidate")])
    v = d.value
    assert v["steps"] == STEPS and v["status"] == "learned" and d.metadata["promoted"]
    assert (v["support"], v["successes"], v["failures"]) == (9, 8, 1)
    assert v["success_rate"] == round(8 / 9, 6)
    assert v["agents"] == ["agent1", "agent2"]  # agent3 has only a candidate
    assert v["agreeing_agents"] == ["agent1", "agent2"]
    assert {(x["agent"], x["entry"]) for x in v["evidence"]} == {
        ("agent1", "p1"), ("agent2", "p2"), ("agent3", "p3")}
    assert v["variants"][0]["agents"] == ["agent1", "agent2"]
    # each link keeps its copy (consolidation.evidence): the agent's version as it read
    assert all(x["scope"] == f"agent:{x['agent']}:ltm:procedural" and "invoice:" in x["text"]
               for x in v["evidence"])
    assert d.key == PKEY and {"procedure", "collective"} <= d.tags
    assert "invoice task procedure" in v["statement"]
    held = stored(d, "c1")
    # an older or replayed version of an agent's procedure counts nothing
    assert await procedures([procedure("p0", "agent1", 2, STEPS, 1, 1)], {PKEY: held}) == []
    assert await procedures([procedure("p1", "agent1", 3, STEPS, 3, 1)], {PKEY: held}) == []
    # agent1's next version replaces its view: the pool is recomputed, not added to
    [d2] = await procedures([procedure("p4", "agent1", 4, STEPS, 5, 1, at=12)], {PKEY: held})
    assert (d2.value["support"], d2.value["successes"]) == (11, 10)
    assert d2.value["revision"] == "reinforced" and d2.supersedes == "c1"
    assert d2.metadata["procedure_version"] == 2


async def test_a_procedure_one_agent_learned_is_only_proposed() -> None:
    [d] = await procedures([procedure("p1", "agent1", 1, STEPS, 2, 0)])
    assert d.value["status"] == "proposed" and d.metadata["promoted"] is False
    assert "proposed" in d.tags
