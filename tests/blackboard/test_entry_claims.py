"""``claimed_agents``: who an entry's own data names as its writer, never its author."""

from __future__ import annotations

from types import MappingProxyType

from blackboard.entry import Entry, claimed_agents


def _entry(**kw: object) -> Entry:
    return Entry(id="1-0", scope="agent:a1:working", value="v", **kw)  # type: ignore[arg-type]


def test_claims_from_metadata_and_tags_sorted_without_the_author() -> None:
    e = _entry(metadata={"agent": "b1", "actor": "c1"}, tags={"agent:d1", "agent:a1", "x"},
               author="a1")
    assert claimed_agents(e) == ["b1", "c1", "d1"]


def test_no_claim_is_an_empty_list() -> None:
    assert claimed_agents(_entry()) == []
    assert claimed_agents(_entry(tags={"agent:", "agents:b1", "team:t1"})) == []
    assert claimed_agents(_entry(metadata={"agent": "", "actor": 7})) == []


def test_a_claim_of_the_author_is_no_claim_and_repeats_count_once() -> None:
    e = _entry(metadata={"agent": "b1"}, tags={"agent:b1", "agent:a1"}, author="a1")
    assert claimed_agents(e) == ["b1"]


def test_metadata_of_any_mapping_kind() -> None:
    e = _entry(metadata=MappingProxyType({"actor": "b1"}))
    assert claimed_agents(e) == ["b1"]
