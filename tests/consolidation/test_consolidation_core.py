"""Drafts, ids, params and the transformer registry."""

from __future__ import annotations

import math
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blackboard.ids import deterministic_id
from consolidation import (
    Draft,
    InvalidParams,
    Provenance,
    TransformContext,
    UnknownTransformer,
    get_transformer,
    transformer_names,
)
from consolidation.text import normalise_text
from tests.consolidation.cons_support import make_entry


def _draft(sources: list[str], key: str | None = None, disc: str = "") -> Draft:
    return Draft(
        value={"x": 1},
        provenance=Provenance.of(sources, "summarize", "1", "e1"),
        key=key,
        discriminator=disc,
    )


def test_provenance_sorts_and_dedupes_sources() -> None:
    assert Provenance.of(["b", "a", "b"], "t", "1", "e").sources == ("a", "b")


def test_entry_id_recipe_and_stability() -> None:
    d = _draft(["b", "a"], key="fact:x:is")
    expected = deterministic_id("e1", "agent:a1:stm", "summarize", "1", "a", "b", "#fact:x:is")
    assert d.entry_id("e1", "agent:a1:stm") == expected
    assert _draft(["a", "b"], key="fact:x:is").entry_id("e1", "agent:a1:stm") == expected
    ids = {
        expected,
        d.entry_id("e2", "agent:a1:stm"),
        d.entry_id("e1", "agent:a2:stm"),
        _draft(["a", "b"]).entry_id("e1", "agent:a1:stm"),
        _draft(["a", "b"], disc="1").entry_id("e1", "agent:a1:stm"),
        _draft(["a"]).entry_id("e1", "agent:a1:stm"),
    }
    assert len(ids) == 6


def test_draft_validates() -> None:
    with pytest.raises(ValueError):
        Draft(value=math.nan, provenance=Provenance.of(["a"], "t", "1", "e"))
    with pytest.raises(ValueError):
        Draft(value=1, provenance=Provenance.of(["a"], "t", "1", "e"), importance=1.5)
    with pytest.raises(ValueError):
        Draft(value=1, provenance=Provenance.of([], "t", "1", "e"))
    d = Draft(value=1, provenance=Provenance.of(["a"], "t", "1", "e"), supersedes="old")
    assert d.full_metadata()["supersedes"] == "old"
    assert d.full_metadata()["provenance"]["sources"] == ["a"]


def test_registry_lists_builtins_and_rejects_unknown() -> None:
    names = transformer_names()
    for n in ("identity", "summarize", "episodic", "semantic", "procedural", "team"):
        assert n in names
        assert get_transformer(n).name == n
    with pytest.raises(UnknownTransformer,
                       match="known: collective_beliefs, collective_procedures, episodic, "):
        get_transformer("sumarize")


async def test_identity_copies_entries() -> None:
    e1 = make_entry("e1", {"text": "hi"}, at=1, tags={"x"}, importance=0.7, agent="a1")
    e2 = make_entry("e2", "plain", at=0)
    ctx = TransformContext("edge1", "agent:a1:working", now_ms=0)
    out = await get_transformer("identity")([e1, e2, e1], ctx)
    assert [d.sources for d in out] == [("e2",), ("e1",)]
    assert out[1].value == {"text": "hi"} and out[1].tags == {"x"}
    # the copy keeps its origin's time and id for ordering downstream
    assert out[1].importance == 0.7
    assert out[1].metadata == {"agent": "a1", "occurred_at": e1.created_at, "origin_id": "e1"}
    assert len({d.entry_id("edge1", "agent:a1:working") for d in out}) == 2


async def test_copies_of_copies_keep_the_first_origin_order() -> None:
    # Copies are written later and get hash ids, yet sort as their originals did.
    a = make_entry("a", "first", at=5)
    b = make_entry("b", "second", at=5)
    ctx = TransformContext("edge1", "agent:a1:stm", now_ms=0)
    first = await get_transformer("identity")([b, a], ctx)
    copies = [
        make_entry(f"z{i}", d.value, at=100 - i, **dict(d.metadata))
        for i, d in enumerate(first)
    ]
    again = await get_transformer("identity")(copies, ctx)
    assert [d.value for d in again] == ["first", "second"]
    assert [d.metadata["origin_id"] for d in again] == ["a", "b"]


async def test_unknown_params_fail_loudly() -> None:
    ctx = TransformContext("e", "s", params={"budgett": 10}, now_ms=0)
    with pytest.raises(InvalidParams, match=r"accepted:.*budget"):
        await get_transformer("summarize")([make_entry("e1", "x")], ctx)
    ctx = TransformContext("e", "s", params={"threshold": 0.5}, now_ms=0)
    with pytest.raises(InvalidParams):
        await get_transformer("team")([make_entry("e1", "x")], ctx)


def _normalise_reference(text: str) -> str:
    """The definition normalise_text must match (its fast paths are an optimisation)."""
    t = unicodedata.normalize("NFKC", text).casefold()
    t = "".join(" " if unicodedata.category(c).startswith(("P", "S")) else c for c in t)
    return " ".join(t.split())


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_normalise_text_matches_its_definition(text: str) -> None:
    # Dedupe hashes are stored: any drift would make old and new duplicates differ.
    assert normalise_text(text) == _normalise_reference(text)


def test_normalise_text_examples() -> None:
    assert normalise_text("  Hello,  WORLD!! ") == "hello world"
    assert normalise_text("Café — naïve \u2018quote\u2019 ½ ﬁ") == "café naïve quote 1 2 fi"
    assert normalise_text("$5 + 3% = ?") == "5 3"
