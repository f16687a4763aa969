from __future__ import annotations

import pytest
from pydantic import ValidationError

from retrieval import LensPreset, MemoryQuery, TagFilter, known_lenses, register_lens
from retrieval.lens import UnknownLens, facts_about, resolve_lens


def test_tag_filter_matches() -> None:
    f = TagFilter(all_of=frozenset({"a"}), any_of=frozenset({"b", "c"}), none_of=frozenset({"x"}))
    assert f.matches({"a", "b"})
    assert f.matches(["a", "c", "z"])
    assert not f.matches({"a"})  # no any_of tag
    assert not f.matches({"b", "c"})  # misses all_of
    assert not f.matches({"a", "b", "x"})  # has a none_of tag
    assert TagFilter().matches(set()) and TagFilter().empty


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"all_of": {"a"}, "none_of": {"a", "b"}}, "in both all_of and none_of"),
        ({"any_of": {"a", "b"}, "none_of": {"a", "b", "c"}}, "also in none_of"),
    ],
)
def test_contradictory_tag_filters(kwargs: dict[str, set[str]], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        TagFilter(**kwargs)  # type: ignore[arg-type]


def test_any_of_partly_excluded_is_fine() -> None:
    f = TagFilter(any_of=frozenset({"a", "b"}), none_of=frozenset({"a"}))
    assert f.matches({"b"}) and not f.matches({"a", "b"})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_results": 0}, "max_results must be a positive integer"),
        ({"max_results": -3}, "max_results must be a positive integer"),
        ({"time_range": (10, 5)}, "start 10 is after its end 5"),
        ({"lens": "no_such_lens"}, "unknown lens 'no_such_lens'; known lenses: "),
        ({"alpha": 1.5}, r"must be in \[0, 1\]"),
        ({"mmr": -0.1}, r"must be in \[0, 1\]"),
        ({"min_strength": -1.0}, "min_strength must be >= 0"),
        ({"fusion": "sum"}, "convex"),
        ({"scopes": []}, "non-empty list"),
        ({"lens": "facts_about"}, "needs a subject"),
        ({"lens": "failures:x"}, "takes no argument"),
        ({"key_pattern": ""}, "key_pattern must be a non-empty glob"),
        ({"order": "oldest"}, "order"),
        ({"order": "newest", "query": "text"}, "order='newest' .* takes no query text"),
        ({"order": "newest", "min_strength": 0.2}, "min_strength needs order='relevance'"),
        ({"time_range": (None, -1)}, "start 0 is after its end -1"),  # open start is 0
        ({"query": "ab\udcff"}, "query is not valid Unicode"),  # argv bytes not UTF-8
    ],
)
def test_query_validation(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        MemoryQuery(**kwargs)  # type: ignore[arg-type]


def test_time_range_open_ends() -> None:
    assert MemoryQuery(time_range=(None, 5)).time_range == (0, 5)
    start, end = MemoryQuery(time_range=(7, None)).time_range or (0, 0)
    assert start == 7 and end > 10**15  # past any ms timestamp
    assert MemoryQuery(order="newest", query="   ").query is None  # blank text is no text


def test_unknown_lens_lists_known() -> None:
    with pytest.raises(UnknownLens) as ei:
        resolve_lens("nope")
    for name in ("recent_actions", "failures", "facts_about", "procedures"):
        assert name in str(ei.value)


def test_properties() -> None:
    assert MemoryQuery(query="x").has_semantic
    assert not MemoryQuery(query="   ").has_semantic
    assert not MemoryQuery(query="x").has_logical
    assert MemoryQuery(time_range=(1, 2)).has_logical
    assert MemoryQuery(key_pattern="k*").has_logical
    assert MemoryQuery(min_strength=0.2).has_logical
    assert MemoryQuery(tag_filter=TagFilter(none_of=frozenset({"x"}))).has_logical


def test_lenses_fill_unset_fields() -> None:
    assert {"recent_actions", "failures", "facts_about", "procedures"} <= set(known_lenses())
    q = MemoryQuery(lens=facts_about("Alice"))
    assert q.query == "Alice" and "fact" in q.tag_filter.any_of
    q = MemoryQuery(lens="failures", query="disk full")
    assert q.query == "disk full" and q.tag_filter.any_of == {"failure", "error"}
    # explicit fields win over the lens
    q = MemoryQuery(lens="recent_actions", tag_filter=TagFilter(any_of=frozenset({"tool"})))
    assert q.tag_filter.any_of == {"tool"} and q.levels == ["working", "stm"]
    q = MemoryQuery(lens="procedures", levels=["x"])
    assert q.levels == ["x"]


def test_register_lens() -> None:
    register_lens("test_lens_tmp", LensPreset(none_of=frozenset({"noise"}), max_results=3))
    q = MemoryQuery(lens="test_lens_tmp")
    assert q.tag_filter.none_of == {"noise"} and q.max_results == 3
    with pytest.raises(ValueError, match="already registered"):
        register_lens("test_lens_tmp", LensPreset())
