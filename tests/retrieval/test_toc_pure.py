"""The table of contents' ids, times and input checks (pure)."""

from __future__ import annotations

import pytest

from blackboard import InvalidArgument
from retrieval.toc import Level, TocNode, keywords_of, node_ids_for, parse_at, parse_ref, span_of


def test_ids_name_their_span() -> None:
    ms = 1683554160000  # 2023-05-08 13:56 UTC, a Monday
    assert node_ids_for(ms) == ("y2023", "m2023-05", "w2023-05-08", "d2023-05-08")
    lvl, a, b = span_of("w2023-05-29")  # type: ignore[misc]
    assert lvl is Level.WEEK and b - a + 1 == 3 * 86_400_000  # 29-31 May: cut at the month
    assert span_of("m2023-02")[2] - span_of("m2023-02")[1] + 1 == 28 * 86_400_000  # type: ignore[index]
    assert span_of("m2023-13") is None and span_of("s2023-05-08") is None


def test_at_resolves_to_the_node_of_the_level() -> None:
    assert parse_at("2023-05") == "m2023-05"
    assert parse_at("2023-05-10", "week") == "w2023-05-08"
    assert parse_at("2023-05-10", "month") == "m2023-05"
    assert parse_at("s2023-05-08.0") == "s2023-05-08.0"
    assert parse_at("2023") == "y2023"


@pytest.mark.parametrize(("at", "level", "field"), [
    ("2023-13", None, "at:"), ("May 2023", None, "at:"), ("", "decade", "level:"),
    ("2023-05", "segment", "level:"), (5, None, "at:"),
])
def test_bad_input_names_the_field(at: object, level: str | None, field: str) -> None:
    with pytest.raises(InvalidArgument, match=rf"^{field}"):
        parse_at(at, level)  # type: ignore[arg-type]


def test_refs_and_stored_nodes_are_checked() -> None:
    assert parse_ref("agent:a:stm#s2023-05-08.2") == ("agent:a:stm", "s2023-05-08.2")
    for bad in ("agent:a:stm#d2023-05-08", "s2023-05-08.0", ""):
        with pytest.raises(InvalidArgument, match=r"^segment:"):
            parse_ref(bad)
    # what an agent may have written into its own table is read defensively
    for raw in ("{", '{"level": "era"}', "[]", None):
        assert TocNode.from_json("s", "root", raw) is None
    assert keywords_of("Hey, I adopted a puppy named Oscar!") == ["adopted", "puppy", "named",
                                                                 "oscar"]
