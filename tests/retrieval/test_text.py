"""One text of an entry (retrieval/text.py) in its two renderings, and the one
"a string, else its text field, else JSON" rule (blackboard.value_text) under both."""

from __future__ import annotations

from blackboard import Entry
from blackboard.entry import value_text
from consolidation.text import entry_text as consolidation_text
from retrieval.text import entry_text


def _e(value: object, **metadata: object) -> Entry:
    return Entry(id="x", scope="agent:a:working", value=value, metadata=metadata)


def test_index_text_has_every_field_and_who_said_it_main_text_only_the_body() -> None:
    e = _e({"action": "open the door", "text": "went in", "n": 2}, speaker="Ann",
           date="1 May 2023")
    assert entry_text(e) == "Ann: action: open the door\ntext: went in\nn: 2\n1 May 2023"
    assert entry_text(e, main=True) == "went in"
    assert consolidation_text(e) == entry_text(e, main=True)


def test_main_text_skips_blank_fields_and_falls_back_to_sorted_json() -> None:
    assert entry_text(_e({"text": "  ", "content": "c", "summary": "s"}), main=True) == "c"
    assert entry_text(_e({"b": 1, "a": "é"}), main=True) == '{"a": "é", "b": 1}'
    assert entry_text(_e({"text": ""}), main=True) == '{"text": ""}'
    assert entry_text(_e("plain"), main=True) == "plain"
    # an episode's title is its headline for people, not its text for consolidation
    episode = {"title": "T", "steps": ["x"]}
    assert entry_text(_e(episode), main=True) == '{"steps": ["x"], "title": "T"}'
    assert value_text(episode) == "T"


def test_display_text_keeps_a_blank_field_and_compact_json() -> None:
    assert value_text({"text": "", "summary": "s"}) == ""
    assert value_text({"b": 1, "a": [1, {"c": 2}]}) == '{"b":1,"a":[1,{"c":2}]}'
    assert value_text({"statement": "A is B", "text": 3}) == "A is B"
