"""team aggregation and the dedupe helpers (cohesion guard)."""

from __future__ import annotations

import itertools
import math
import random
from typing import Any

import numpy as np

from consolidation import TransformContext, get_transformer
from consolidation.dedupe import (
    DuplicateKind,
    exact_groups,
    find_duplicates,
    near_duplicate_clusters,
)
from tests.consolidation.cons_support import T0, make_entry

# A~B and B~C at cosine 0.95, A and C at cos(2θ) ≈ 0.805: unrelated under 0.92.
THETA = math.acos(0.95)
VEC = {
    "A": [1.0, 0.0],
    "B": [math.cos(THETA), math.sin(THETA)],
    "C": [math.cos(2 * THETA), math.sin(2 * THETA)],
}


def test_exact_groups_normalise() -> None:
    assert exact_groups(["The key rotates.", "the  KEY rotates!", "other"]) == [[0, 1], [2]]


def test_chain_never_merges_unrelated_ends() -> None:
    for perm in itertools.permutations("ABC"):
        clusters = near_duplicate_clusters(np.array([VEC[x] for x in perm]), 0.92)
        for cl in clusters:
            assert {perm[i] for i in cl} != {"A", "B", "C"}
            assert not {"A", "C"} <= {perm[i] for i in cl}
    # With B first, B takes A (ties go to the lower index) and C stays alone.
    assert near_duplicate_clusters(np.array([VEC["B"], VEC["A"], VEC["C"]]), 0.92) == [[0, 1], [2]]


def test_find_duplicates_is_order_free() -> None:
    es = [
        make_entry("e1", "A", at=0),
        make_entry("e2", "a!", at=1),
        make_entry("e3", "B", at=2),
        make_entry("e4", "C", at=3),
    ]
    vecs = {"e1": VEC["A"], "e2": VEC["A"], "e3": VEC["B"], "e4": VEC["C"]}
    groups = find_duplicates(es, np.array([vecs[e.id] for e in es]), 0.92)
    assert [(g.keep, g.merged, g.kind) for g in groups] == [
        ("e1", ("e2", "e3"), DuplicateKind.NEAR)
    ]
    rev = list(reversed(es))
    assert find_duplicates(rev, np.array([vecs[e.id] for e in rev]), 0.92) == groups
    assert [g.kind for g in find_duplicates(es)] == [DuplicateKind.EXACT]


async def test_team_merges_with_attribution() -> None:
    es = [
        make_entry(
            "m1", "The API key rotates every Monday.", at=0, scope="agent:a1:stm", tags={"ops"}
        ),
        make_entry(
            "m2",
            "the api key rotates every monday!!",
            at=1,
            scope="agent:a2:stm",
            tags={"infra"},
            reinforcements=2,
            importance=0.8,
        ),
        make_entry("m3", "Lunch is at noon.", at=2, scope="agent:a2:stm"),
    ]
    out = await get_transformer("team")(es, TransformContext("edge-team", "team:t1", now_ms=T0))
    assert [d.sources for d in out] == [("m1", "m2"), ("m3",)]
    d = out[0]
    assert d.value == "The API key rotates every Monday."
    assert d.metadata["agents"] == ["a1", "a2"] and d.metadata["merge"] == "exact"
    assert [(a["agent"], a["entry"]) for a in d.metadata["attribution"]] == [
        ("a1", "m1"),
        ("a2", "m2"),
    ]
    assert d.reinforcements == 3 and d.reinforced_by == ("a2",)
    assert d.tags == {"ops", "infra"} and d.importance == 0.8
    assert out[1].metadata["merge"] == "none" and out[1].reinforcements == 0


async def test_team_near_duplicates_respect_guard() -> None:
    texts = {"alpha": VEC["B"], "beta": VEC["A"], "gamma": VEC["C"]}

    def embed(ts: list[str]) -> np.ndarray:
        return np.array([texts[t] for t in ts])

    es = [make_entry(f"n{i}", t, at=i, scope=f"agent:a{i}:stm") for i, t in enumerate(texts)]
    ctx = TransformContext("e", "team:t1", similarity=embed, now_ms=T0)
    out = await get_transformer("team")(es, ctx)
    assert [d.sources for d in out] == [("n0", "n1"), ("n2",)]
    assert out[0].metadata["merge"] == "near" and out[0].metadata["agents"] == ["a0", "a1"]
    random.Random(2).shuffle(es)
    assert await get_transformer("team")(es, ctx) == out


async def test_team_empty_batch_and_single_group_skip_similarity() -> None:
    calls: list[list[str]] = []

    def embed(ts: list[str]) -> np.ndarray:
        calls.append(ts)
        return np.ones((len(ts), 2))

    ctx = TransformContext("e", "team:t1", similarity=embed, now_ms=T0)
    assert await get_transformer("team")([], ctx) == []
    es = [make_entry("s1", "Same text.", at=0), make_entry("s2", "same text", at=1)]
    [d] = await get_transformer("team")(es, ctx)
    assert calls == [] and d.metadata["merge"] == "exact" and d.metadata["duplicates"] == 1
    assert d.key == "team:" + d.metadata["content_hash"] and d.provenance.sources == ("s1", "s2")


async def test_the_same_statement_from_another_member_merges_into_the_teams_entry() -> None:
    """Three agents say it in three batches (one edge each): one live team entry with
    three attributions; a replayed batch drafts nothing."""
    from blackboard import Entry

    t = get_transformer("team")

    def held(d: Any, eid: str) -> Entry:
        return Entry(id=eid, scope="team:t1", value=d.value, tags=d.tags, key=d.key,
                     metadata=d.full_metadata(), reinforcements=d.reinforcements,
                     importance=d.importance, created_at=T0)

    prior: dict[str, Entry] = {}
    for i, agent in enumerate(["a1", "a2", "a3"]):
        e = make_entry(f"g{i}", "Globex prefers email invoices." if i != 1 else
                       "globex prefers email invoices!", at=i, scope=f"agent:{agent}:stm",
                       tags={f"from:{agent}"})
        [d] = await t([e], TransformContext("edge-" + agent, "team:t1", existing=prior,
                                            now_ms=T0))
        assert d.supersedes == (prior[d.key].id if prior else None)
        replay = await t([e], TransformContext("edge-" + agent, "team:t1",
                                               existing={d.key: held(d, f"t{i}")}, now_ms=T0))
        assert replay == []
        prior = {d.key: held(d, f"t{i}")}
    assert d.value == "Globex prefers email invoices."
    assert [a["agent"] for a in d.metadata["attribution"]] == ["a1", "a2", "a3"]
    assert d.metadata["agents"] == ["a1", "a2", "a3"] and d.metadata["duplicates"] == 2
    assert d.metadata["merge"] == "exact" and d.reinforcements == 2
    assert d.tags == {"from:a1", "from:a2", "from:a3"}
    assert d.reinforced_by == ("a2", "a3")


def test_texts_whose_numbers_differ_never_merge_however_alike() -> None:
    """MiniLM puts "net-30" and "net-60" terms at cosine 0.95: the numbers guard keeps
    them (and "task t1" / "task t2") apart; equal numbers still merge."""
    from consolidation.dedupe import numbers_of

    texts = ["Acme uses net-30 payment terms.", "Acme uses net-60 payment terms.",
             "Acme uses net-30 terms for payment."]
    same = np.ones((3, 4))  # as alike as vectors get
    nums = [numbers_of(t) for t in texts]
    assert nums[0] == nums[2] == ("30",) and nums[1] == ("60",)
    assert near_duplicate_clusters(same, 0.95, nums) == [[0, 2], [1]]
    assert near_duplicate_clusters(same, 0.95) == [[0, 1, 2]]
    # the order is part of the statement (MiniLM: cosine >= 0.95 for these two)
    assert numbers_of("round 0 step 1") != numbers_of("round 1 step 0")


async def test_a_statement_cannot_hold_its_slot_by_naming_a_time_to_come() -> None:
    """A member's own stm entry naming a future ``occurred_at`` counts as said when it was
    written: the later contrary statement of another member still becomes the team's."""
    t = get_transformer("team")
    forged = make_entry("f1", "Acme Corp lives in Springfield.", at=0, scope="agent:a1:stm",
                        occurred_at=T0 + 10**12)
    honest = make_entry("h1", "Acme Corp lives in Shelbyville.", at=5, scope="agent:a2:stm")
    [d] = await t([forged, honest], TransformContext("e", "team:t1", now_ms=T0))
    assert d.key == "team:fact:acme-corp:lives_in"
    assert d.value == "Acme Corp lives in Shelbyville." and d.metadata["agents"] == ["a2"]
    assert [r["entry"] for r in d.metadata["earlier"]] == ["f1"]
