"""A belief's canonical key: kind and subject type in it, the slot it states (issue 25)."""

from __future__ import annotations

import pytest

from retrieval.belief_keys import CADENCE_DAYS, KINDS, SUBJECT_TYPES, BeliefKey, slot_of_key


def test_a_key_names_kind_subject_type_and_slot() -> None:
    k = BeliefKey("world_fact", "entity", "acme-corp", "lives_in")
    assert str(k) == "fact:world_fact:entity:acme-corp:lives_in"
    assert k.slot == "fact:acme-corp:lives_in" and k.single_valued
    assert BeliefKey.parse(str(k)) == k
    uses = BeliefKey.parse("fact:tooling_state:tool:ci-bot:uses:webhooks")
    assert uses == BeliefKey("tooling_state", "tool", "ci-bot", "uses", "webhooks")
    assert uses is not None and not uses.single_valued
    assert uses.slot == "fact:ci-bot:uses:webhooks"


def test_a_key_of_the_older_form_is_its_own_slot() -> None:
    old = BeliefKey.parse("fact:acme-corp:lives_in")
    assert old == BeliefKey(None, None, "acme-corp", "lives_in")
    assert old is not None and str(old) == old.slot == "fact:acme-corp:lives_in"
    assert old.former() == []
    new = BeliefKey.parse("fact:world_fact:entity:acme-corp:lives_in")
    assert new is not None and new.former() == ["fact:acme-corp:lives_in"]
    assert BeliefKey.parse("fact:alice:has:dog") == BeliefKey(None, None, "alice", "has", "dog")


@pytest.mark.parametrize("key", ["procedure:deploy", "fact", "fact:x", "fact:a:b:c:d:e:f:g",
                                 "fact:nope:entity:a:b", "fact:world_fact:nope:a:b", ""])
def test_what_is_no_belief_key_stays_itself(key: str) -> None:
    assert BeliefKey.parse(key) is None
    assert slot_of_key(key) == key


def test_every_kind_has_a_cadence() -> None:
    assert set(KINDS) == set(CADENCE_DAYS) and len(SUBJECT_TYPES) == 5
