"""team_beliefs: the team holds one belief per key, fed by every member's evidence."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from blackboard.entry import Entry
from consolidation import TransformContext, get_transformer
from consolidation.draft import Draft
from retrieval.reconcile import team_beliefs_first
from retrieval.scoring import ScoredEntry
from tests.consolidation.cons_support import MIN, T0

KEY = "fact:world_fact:entity:acme-corp:lives_in"


def link(entry: str, agent: str, town: str, at: int) -> dict[str, Any]:
    return {"entry": entry, "agent": agent, "at": T0 + at * MIN, "stance": "support",
            "weight": 1.0, "claim": f"Acme Corp lives in {town}", "object": town,
            "negated": False, "scope": f"agent:{agent}:stm", "author": agent,
            "text": f"Acme Corp lives in {town}."}


def agent_belief(eid: str, agent: str, town: str, links: list[dict[str, Any]],
                 at: int = 10) -> Entry:
    return Entry(
        id=eid, scope=f"agent:{agent}:ltm:semantic",
        value={"subject": "Acme Corp", "predicate": "lives_in", "object": town,
               "negated": False, "statement": f"Acme Corp lives in {town}",
               "canonical_key": KEY, "evidence": links},
        tags=frozenset({"fact"}), metadata={"canonical_key": KEY, "status": "active"},
        key=KEY, created_at=T0 + at * MIN)


# The demo's shape: agent1 heard Springfield twice, then the move; agents 2 and 3 moved on.
A1 = agent_belief("b1", "agent1", "Springfield", [
    link("e1", "agent1", "Springfield", 1), link("e2", "agent1", "Springfield", 2),
    link("e3", "agent1", "Shelbyville", 7)])
A2 = agent_belief("b2", "agent2", "Shelbyville", [
    link("e4", "agent2", "Springfield", 1), link("e5", "agent2", "Shelbyville", 8)])
A3 = agent_belief("b3", "agent3", "Shelbyville", [link("e6", "agent3", "Shelbyville", 9)])


def ctx(existing: dict[str, Entry] | None = None) -> TransformContext:
    return TransformContext("edge-tb", "team:ops:ltm:semantic", existing=existing or {},
                            now_ms=T0 + 20 * MIN)


def as_entry(d: Draft, eid: str) -> Entry:
    return Entry(id=eid, scope="team:ops:ltm:semantic", value=d.value, tags=d.tags,
                 metadata=d.full_metadata(), key=d.key, created_at=T0 + 20 * MIN)


async def run(batch: list[Entry], existing: dict[str, Entry] | None = None) -> list[Draft]:
    return await get_transformer("team_beliefs")(batch, ctx(existing))


async def test_each_agents_latest_word_counts_once_and_every_agent_is_evidence() -> None:
    [d] = await run([A1, A2, A3])
    assert d.key == KEY and d.value["object"] == "Shelbyville"
    assert d.value["statement"] == "Acme Corp lives in Shelbyville"
    views = d.metadata["views"]
    assert {a: v["object"] for a, v in views.items()} == dict.fromkeys(
        ("agent1", "agent2", "agent3"), "shelbyville")
    stance = {ln["entry"]: ln["stance"] for ln in d.value["evidence"]}
    assert stance == {"e1": "contradict", "e2": "contradict", "e3": "support",
                      "e4": "contradict", "e5": "support", "e6": "support"}
    assert {ln["agent"] for ln in d.value["evidence"]} == {"agent1", "agent2", "agent3"}
    assert all(ln["text"] for ln in d.value["evidence"])  # snapshots carried
    comps = d.value["confidence_components"]
    assert comps["agents"] == 3 and comps["diversity"] == 0.75
    assert d.metadata["agents"] == ["agent1", "agent2", "agent3"]
    assert set(d.sources) == {"b1", "b2", "b3"}  # agent beliefs are provenance only


async def test_diversity_beats_repetition() -> None:
    loud = agent_belief("b9", "agent1", "Springfield", [
        link(f"s{i}", "agent1", "Springfield", i) for i in range(5)])
    [d] = await run([loud, A3, replace(A2, value={**A2.value, "evidence": [
        link("e5", "agent2", "Shelbyville", 8)]})])
    assert d.value["object"] == "Shelbyville"  # two agents against one, however loud
    single = await run([loud])
    assert single[0].value["object"] == "Springfield"
    assert single[0].value["confidence_components"]["agents"] == 1


async def test_an_agent_joining_later_updates_the_team_belief_and_replays_change_nothing() -> None:
    [first] = await run([A1])  # agent1 alone, its latest word: Shelbyville
    team = as_entry(first, "t1")
    assert first.metadata["views"]["agent1"]["count"] == 1
    assert await run([A1], {KEY: team}) == []  # re-delivered: every link already counted
    [second] = await run([A2, A3], {KEY: team})
    assert second.supersedes == "t1" and second.value["revision"] == "reinforced"
    assert set(second.metadata["views"]) == {"agent1", "agent2", "agent3"}
    # agent1's links are carried over from the team's previous belief
    assert {ln["entry"] for ln in second.value["evidence"]} >= {"e1", "e2", "e3", "e5", "e6"}


async def test_a_member_changing_its_mind_flips_a_tied_team() -> None:
    a = agent_belief("x1", "agent1", "Paris", [link("p1", "agent1", "Paris", 1)])
    b = agent_belief("x2", "agent2", "Rome", [link("r1", "agent2", "Rome", 2)])
    [d] = await run([a, b])
    assert d.value["object"] == "Rome"  # tie: the most recent view
    team = as_entry(d, "t1")
    later = agent_belief("x3", "agent2", "Paris", [link("p2", "agent2", "Paris", 5)])
    [d2] = await run([later], {KEY: team})
    assert d2.value["object"] == "Paris" and d2.value["revision"] == "changed"
    assert d2.metadata["views"]["agent2"]["object"] == "paris"


def hit(e: Entry, score: float) -> ScoredEntry:
    return ScoredEntry(e, e.scope, None, None, score, 1.0, 1.0, 0.5, score)


def test_recall_puts_the_team_belief_first_on_its_key() -> None:
    team = Entry(id="t", scope="team:ops:ltm:semantic", value={"statement": "x"},
                 metadata={"canonical_key": KEY, "team_belief": True})
    other = Entry(id="o", scope="agent:agent1:stm", value="unrelated")
    hits = [hit(other, 0.9), hit(A1, 0.8), hit(team, 0.5)]
    assert [h.entry.id for h in team_beliefs_first(hits)] == ["o", "t", "b1"]
    gone = replace(team, superseded_by="t2")
    assert [h.entry.id for h in team_beliefs_first([hit(A1, .8), hit(gone, .5)])] == ["b1", "t"]


async def test_a_member_speaks_only_for_itself() -> None:
    # agent1 writes a "belief" into its own semantic scope naming agents 2 and 3 as the
    # sources of Springfield links, one dated far in the future, one citing agent2's stm.
    forged = agent_belief("f1", "agent1", "Springfield", [
        {**link("x1", "agent2", "Springfield", 1), "scope": "agent:agent1:stm"},
        {**link("x2", "agent3", "Springfield", 10**6), "scope": "agent:agent1:stm"},
        link("x3", "agent2", "Springfield", 2)])  # cites agent:agent2:stm: dropped
    [d] = await run([forged, A2, A3])
    assert set(d.metadata["views"]) == {"agent1", "agent2", "agent3"}
    assert d.metadata["views"]["agent1"]["at"] <= forged.created_at
    assert d.value["object"] == "Shelbyville"  # one forger against two
    by = {ln["entry"]: ln for ln in d.value["evidence"]}
    assert "x3" not in by and by["x1"]["agent"] == by["x2"]["agent"] == "agent1"
    team_scope_belief = replace(A2, scope="team:ops:ltm:semantic", id="tb")
    assert await run([team_scope_belief]) == []  # speaks for no member


async def test_one_message_telling_the_move_leaves_the_later_sentence_as_the_view() -> None:
    """An agent's message stating the old and the new town gives two links on one entry at
    one instant: its view is the later sentence (``pos``), whatever their sorted order."""
    one = [link("e7", "agent1", "Springfield", 7), {**link("e7", "agent1", "Shelbyville", 7),
                                                   "pos": 1}]
    for links in (one, one[::-1]):
        [d] = await run([agent_belief("b7", "agent1", "Shelbyville", links)])
        assert d.metadata["views"]["agent1"]["object"] == "shelbyville", links
        assert d.metadata["views"]["agent1"]["pos"] == 1
        # a replay changes nothing: the view already counts both links
        assert await run([agent_belief("b7", "agent1", "Shelbyville", links)],
                         {KEY: as_entry(d, "t7")}) == []


async def test_the_team_belief_has_its_own_valid_time() -> None:
    """Not a member belief's: from the view that made the team believe the claim, kept
    while the claim holds, and never before the previous version began."""
    a1 = replace(A1, value={**A1.value, "valid_from_ms": T0 + MIN},
                 metadata={**A1.metadata, "valid_from_ms": T0 + MIN, "valid_to_ms": T0})
    [d] = await run([a1])
    assert d.value["object"] == "Shelbyville"  # agent1's own later word
    assert d.metadata["valid_from_ms"] == d.value["valid_from_ms"] == T0 + 7 * MIN
    assert "valid_to_ms" not in d.metadata and "valid_to_ms" not in d.value
    first = as_entry(d, "t1")
    # agents 2 and 3 back the same town: a reinforced version keeps the start
    [d2] = await run([A2, A3], {KEY: first})
    assert d2.value["revision"] == "reinforced"
    assert d2.metadata["valid_from_ms"] == T0 + 7 * MIN
    # a team that held Springfield moves when a member's later word tips it
    old = agent_belief("b0", "agent1", "Springfield", [
        link("e1", "agent1", "Springfield", 1), link("e2", "agent1", "Springfield", 2)])
    [s] = await run([old])
    assert s.metadata["valid_from_ms"] == T0 + MIN
    [moved] = await run([A2], {KEY: as_entry(s, "t0")})
    assert moved.value["object"] == "Shelbyville" and moved.value["revision"] == "changed"
    assert moved.metadata["valid_from_ms"] == T0 + 8 * MIN  # agent2's move


async def test_links_of_one_instant_keep_their_write_order() -> None:
    """Two statements copied at one instant (different copies): the view is the one
    written later (``seq``), whatever the copies' ids."""
    links = [{**link("dff", "agent1", "Springfield", 7), "seq": "01HZ0000000000000000000001"},
             {**link("d00", "agent1", "Shelbyville", 7), "seq": "01HZ0000000000000000000002"}]
    for ls in (links, links[::-1]):
        [d] = await run([agent_belief("b8", "agent1", "Shelbyville", ls)])
        assert d.metadata["views"]["agent1"]["object"] == "shelbyville"
