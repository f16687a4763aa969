"""semantic: extraction, canonical keys, stances, confidence, supersession."""

from __future__ import annotations

import math
import random

import pytest

from blackboard.entry import Entry
from consolidation import TransformContext, get_transformer
from consolidation.facts import extract_facts
from consolidation.kinds import canonical_key
from consolidation.semantic import draft_entry, superseded_metadata
from tests.consolidation.cons_support import MIN, T0, make_entry

DAY = 86_400_000


def ctx(existing: dict[str, Entry] | None = None, now: int = T0 + 10 * MIN) -> TransformContext:
    return TransformContext(
        "edge-sem", "agent:a1:ltm:semantic", existing=existing or {}, now_ms=now
    )


def belief(eid: str, obj: str, *, weight: float, count: int, at: int = T0) -> Entry:
    return Entry(
        id=eid,
        scope="agent:a1:ltm:semantic",
        value={"subject": "Alice", "predicate": "lives_in", "object": obj, "negated": False},
        metadata={
            "support_weight": weight,
            "source_count": count,
            "agents": ["a9"],
            "last_supported_ms": at,
            "weighted_at_ms": T0 + 10 * MIN,
        },
        key="fact:world_fact:entity:alice:lives_in",
        created_at=at,
    )


def test_canonical_keys() -> None:
    es = [
        make_entry("f1", "Alice lives in Paris.", at=0),
        make_entry("f2", "The user prefers dark mode!", at=1),
        make_entry("f3", {"text": "Bob doesn\u2019t use Vim. Is Bob happy?"}, at=2),
        make_entry(
            "f4", "ignored", at=3, subject="Project X", predicate="Deployed On", object="K8s"
        ),
        make_entry("f5", "Yesterday we went to the park and it was fun because of the sun.", at=4),
    ]
    keys = [(canonical_key(f), f.negated) for f in extract_facts(es)]
    assert keys == [
        ("fact:world_fact:entity:alice:lives_in", False),
        ("fact:operator_preference:entity:user:prefers", False),
        ("fact:tooling_state:entity:bob:uses:vim", True),
        ("fact:project_state:project:project-x:deployed_on:k8s", False),
    ]


async def test_new_belief_confidence_and_context() -> None:
    es = [
        make_entry("n1", "Alice lives in Paris.", at=0, agent="a1"),
        # agents are authors: a2 wrote in its own scope (a metadata name is only a claim)
        make_entry("n2", "Alice lives in Paris.", at=1, scope="agent:a2:stm"),
        make_entry("n3", "Alice went to the market.", at=2),
    ]
    [d] = await get_transformer("semantic")(es, ctx())
    v = d.value
    assert d.key == "fact:world_fact:entity:alice:lives_in" and d.supersedes is None
    assert v["statement"] == "Alice lives in Paris" and v["revision"] == "new"
    assert [(e["entry"], e["stance"]) for e in v["evidence"]] == [
        ("n1", "support"),
        ("n2", "support"),
        ("n3", "context"),
    ]
    c = v["confidence_components"]
    assert c["source_count"] == 2 and c["agents"] == 2
    assert c["count_score"] == pytest.approx(1 - math.exp(-2 / 3), abs=1e-6)
    assert c["diversity"] == pytest.approx(2 / 3, abs=1e-6)
    assert c["contradiction_weight"] == 0 and c["balance"] == 1
    # the same two entries both written by a1, one claiming a2: one agent, not two
    forged = [es[0], make_entry("n2", "Alice lives in Paris.", at=1, agent="a2"), es[2]]
    [d] = await get_transformer("semantic")(forged, ctx())
    assert d.value["confidence_components"]["agents"] == 1
    assert {e["agent"] for e in d.value["evidence"]} == {"a1"}
    expected = 0.5 * (1 - math.exp(-2 / 3)) + 0.25 * (2 / 3) + 0.25 * c["recency"]
    assert v["confidence"] == pytest.approx(expected, abs=1e-6)
    assert v["status"] == "active" and d.sources == ("n1", "n2", "n3")


async def test_changed_belief_supersedes_old_entry() -> None:
    old = belief("old1", "Berlin", weight=1.0, count=1)
    es = [
        make_entry("c1", "Alice lives in Paris.", at=0, agent="a1"),
        make_entry("c2", "Alice took a train to Paris.", at=1, agent="a2"),  # no pattern: context
        make_entry("c3", "alice lives in paris", at=2, agent="a3"),
    ]
    [d] = await get_transformer("semantic")(es, ctx({"fact:world_fact:entity:alice:lives_in": old}))
    v = d.value
    assert d.supersedes == "old1" and v["supersedes"] == "old1" and v["revision"] == "changed"
    assert v["object"] == "paris" and v["negated"] is False  # display from the latest fact
    # Stances are relative to the existing belief (Berlin): Paris contradicts it.
    stances = {e["entry"]: e["stance"] for e in v["evidence"]}
    assert stances == {"c1": "contradict", "c3": "contradict", "c2": "context"}
    # Relative to the new claim, the old belief's weight counts against it.
    assert v["confidence_components"]["contradiction_weight"] == pytest.approx(1.0)
    assert d.full_metadata()["supersedes"] == "old1"
    marked = superseded_metadata(old, d.entry_id("edge-sem", "agent:a1:ltm:semantic"), T0)
    assert marked["status"] == "superseded" and marked["superseded_by"].startswith("d")


async def test_strong_belief_is_contested_not_flipped() -> None:
    old = belief("old2", "Paris", weight=5.0, count=5)
    es = [make_entry("k1", "Alice lives in Berlin.", at=0, agent="a1")]
    [d] = await get_transformer("semantic")(es, ctx({"fact:world_fact:entity:alice:lives_in": old}))
    assert d.value["object"] == "Paris" and d.value["revision"] == "contested"
    assert d.value["evidence"][0]["stance"] == "contradict"
    assert d.supersedes == "old2" and d.value["confidence_components"]["source_count"] == 5


async def test_reinforced_belief_accumulates() -> None:
    old = belief("old3", "Paris", weight=1.0, count=2)
    es = [make_entry("r1", "Alice lives in Paris.", at=0, agent="a1")]
    [d] = await get_transformer("semantic")(es, ctx({"fact:world_fact:entity:alice:lives_in": old}))
    assert d.value["revision"] == "reinforced" and d.value["evidence"][0]["stance"] == "support"
    c = d.value["confidence_components"]
    assert c["source_count"] == 3 and c["agents"] == 2  # a1 plus the stored a9


async def test_contradiction_only_within_one_key() -> None:
    es = [
        make_entry("u1", "Bob uses vim.", at=0),
        make_entry("u2", "Bob uses emacs.", at=1),
        make_entry("u3", "Bob does not use vim.", at=2),
    ]
    out = await get_transformer("semantic")(es, ctx())
    by_key = {d.key: d for d in out}
    assert sorted(by_key) == ["fact:tooling_state:entity:bob:uses:emacs",
                              "fact:tooling_state:entity:bob:uses:vim"]
    emacs = by_key["fact:tooling_state:entity:bob:uses:emacs"].value
    assert [e["stance"] for e in emacs["evidence"] if e["entry"] == "u2"] == ["support"]
    assert emacs["confidence_components"]["contradiction_weight"] == 0
    vim = by_key["fact:tooling_state:entity:bob:uses:vim"].value
    # Equal weight for both polarities: the most recent (the negation) wins.
    assert vim["negated"] is True and vim["statement"] == "Bob does not use vim"
    assert {e["entry"]: e["stance"] for e in vim["evidence"] if e["claim"]} == {
        "u1": "contradict",
        "u3": "support",
    }


async def test_old_evidence_is_stale() -> None:
    es = [make_entry("o1", "Alice lives in Paris.", at=0)]
    [d] = await get_transformer("semantic")(es, ctx(now=T0 + 90 * DAY))
    assert d.value["confidence_components"]["recency"] == pytest.approx(0.125)
    assert d.value["status"] == "stale"


async def test_semantic_deterministic_under_shuffle() -> None:
    es = [
        make_entry(f"s{i}", t, at=i)
        for i, t in enumerate(
            ["Alice lives in Paris.", "Bob uses vim.", "Alice prefers tea.", "Alice lives in Rome."]
        )
    ]
    a = await get_transformer("semantic")(es, ctx())
    random.Random(5).shuffle(es)
    b = await get_transformer("semantic")(es, ctx())
    assert a == b
    ids = [d.entry_id("edge-sem", "agent:a1:ltm:semantic") for d in a]
    assert ids == [d.entry_id("edge-sem", "agent:a1:ltm:semantic") for d in b]
    # three keys; Alice's home changed within the batch: its Paris version, then Rome
    assert len(set(ids)) == len(ids) == 4


async def test_a_later_statement_updates_an_earlier_one() -> None:
    """Evidence stated before a contrary statement counts at ``update_discount`` (0.5): two
    old mentions against one newer change the belief; five do not (contested above)."""
    t = get_transformer("semantic")
    said = [make_entry(f"p{i}", "Alice lives in Springfield.", at=i, agent="a1") for i in (0, 1)]
    [d0] = await t(said, ctx(now=T0 + 2 * MIN))
    old = draft_entry(d0, ctx(now=T0 + 2 * MIN))
    es = [make_entry("m1", "Alice lives in Shelbyville.", at=5, agent="a1")]
    [d] = await t(es, ctx({"fact:world_fact:entity:alice:lives_in": old}))
    assert d.value["object"] == "Shelbyville" and d.value["revision"] == "changed"
    assert d.value["status"] == "active" and d.supersedes == old.id
    assert d.metadata["valid_from_ms"] == T0 + 5 * MIN
    # the belief it replaces is retired with the end of its valid time
    marked = superseded_metadata(old, "new", T0, d.metadata["valid_from_ms"])
    assert marked["status"] == "superseded" and marked["valid_to_ms"] == T0 + 5 * MIN


async def test_a_later_sentence_of_one_message_updates_an_earlier_one() -> None:
    """One message telling the old and the new place (one entry, one instant): the later
    sentence is the later statement, whichever town it names, and each evidence link says
    which sentence it is."""
    t = get_transformer("semantic")
    for first, then in (("Springfield", "Shelbyville"), ("Shelbyville", "Springfield")):
        both = make_entry("m1", f"Alice lives in {first}. Alice lives in {then}.", at=5,
                          agent="a1")
        # the message changed the belief: both versions, the later one current
        old, d = await t([both], ctx())
        assert (old.value["object"], d.value["object"]) == (first, then)
        assert d.supersedes == old.entry_id("edge-sem", "agent:a1:ltm:semantic")
        assert sorted((ln.get("pos", 0), ln["object"]) for ln in d.value["evidence"]) == [
            (0, first), (1, then)]


async def test_a_batch_that_changes_a_belief_leaves_both_versions() -> None:
    """Springfield then Shelbyville in one batch: the Springfield version (valid until the
    move) is drafted first, superseded by the Shelbyville one, so "as of" before the move
    has an answer."""
    es = [
        make_entry("s1", "Alice lives in Springfield.", at=0, agent="a1"),
        make_entry("s2", "Alice lives in Shelbyville.", at=3, agent="a1"),
        make_entry("s3", "Alice went shopping.", at=4, agent="a1"),  # context
    ]
    first, final = await get_transformer("semantic")(es, ctx())
    # two entries, never one id (a replayed write would drop the second)
    assert first.entry_id("e", "t") != final.entry_id("e", "t")
    assert first.value["object"] == "Springfield" and first.supersedes is None
    assert first.metadata["valid_from_ms"] == T0
    by = first.entry_id("edge-sem", "agent:a1:ltm:semantic")
    assert final.value["object"] == "Shelbyville" and final.supersedes == by
    assert final.value["revision"] == "changed" and final.metadata["valid_from_ms"] == T0 + 3 * MIN
    # the whole batch stays the final version's evidence
    assert {e["entry"] for e in final.value["evidence"]} == {"s1", "s2", "s3"}


async def test_contradiction_outweighing_support_invalidates() -> None:
    es = [make_entry(f"v{i}", f"Alice lives in {town}.", at=i, agent="a1")
          for i, town in enumerate(["Rome", "Oslo", "Lima", "Kyiv"])]
    out = await get_transformer("semantic")(es, ctx())
    final = out[-1]
    assert final.value["object"] == "Kyiv" and final.value["status"] == "invalidated"
    assert final.metadata["status"] == "invalidated"


def test_messages_speak_for_their_speaker_and_counts_key_on_the_noun() -> None:
    def said(speaker: str, text: str, at: int) -> Entry:
        return make_entry(f"m{at}", {"kind": "message", "speaker": speaker, "text": text}, at=at)

    fs = extract_facts([said("Ana", "I now live in Porto.", 0), said("Bo", "I live in Rome.", 1),
                        said("Ana", "I have 3 cats.", 2), said("Ana", "I have 4 cats now.", 3)])
    assert [canonical_key(f) for f in fs] == [
        "fact:world_fact:entity:ana:lives_in", "fact:world_fact:entity:bo:lives_in",
        "fact:world_fact:entity:ana:has:cat", "fact:world_fact:entity:ana:has:cat"]
    assert [f.object for f in fs][2:] == ["3 cats", "4 cats now"]


async def test_beliefs_carry_kind_subject_type_and_freshness() -> None:
    from consolidation.facts import Fact
    from consolidation.kinds import classify

    def k(s: str, p: str, o: str, agent: str | None = None) -> tuple[str, str]:
        return classify(Fact(s, p, o, False, "e", 0, agent))

    assert k("The user", "prefers", "dark mode") == ("operator_preference", "entity")
    assert k("Project X", "is", "in beta") == ("project_state", "project")
    assert k("Telegram bot", "uses", "webhooks") == ("tooling_state", "tool")
    assert k("Richard", "is", "Jason's business partner") == ("relationship_fact", "entity")
    assert k("a1", "is", "slow at recall", agent="a1") == ("self_model", "agent")
    assert k("Acme Corp", "lives_in", "Springfield") == ("world_fact", "entity")
    es = [make_entry("k1", "Acme Corp lives in Springfield.", at=0)]
    [d] = await get_transformer("semantic")(es, ctx(now=T0 + 45 * DAY))
    assert d.metadata["belief_kind"] == d.value["belief_kind"] == "world_fact"
    assert d.metadata["subject_type"] == "entity"
    assert d.metadata["freshness"] == pytest.approx(0.5 ** (45 / 90), abs=1e-3)
    assert d.metadata["revalidation_due_ms"] == T0 + 45 * DAY + 90 * DAY


async def test_copies_are_ordered_as_they_were_written_not_as_copied() -> None:
    """Copies (the identity edge) of two messages written within one millisecond, copied
    in one batch: their time is the originals' (``occurred_at``) and their order the
    originals' write order (``origin_id``, a ULID), whatever the copies' hash ids."""
    t = get_transformer("semantic")
    copies = [make_entry(cid, f"Alice lives in {town}.", at=9, agent="a1",
                         occurred_at=T0 + MIN, origin_id=origin)
              for cid, town, origin in (("dff", "Springfield", "01HZ0000000000000000000001"),
                                        ("d00", "Shelbyville", "01HZ0000000000000000000002"))]
    old, d = await t(copies, ctx())
    assert (old.value["object"], d.value["object"]) == ("Springfield", "Shelbyville")
    assert d.metadata["valid_from_ms"] == T0 + MIN  # the originals' time, not the copy's
    assert [ln.get("seq") for ln in d.value["evidence"]] == [
        "01HZ0000000000000000000001", "01HZ0000000000000000000002"]
