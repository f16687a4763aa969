"""Current truth first (issue 25): beliefs' status, history, "as of" and raw updates."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from blackboard import Entry
from retrieval.query import MemoryQuery
from retrieval.scoring import ScoredEntry
from retrieval.truth import belief_valid_from, belief_valid_to, current_truth, truth_filter
from retrieval.updates import latest_first, slot_of

T0 = 1_700_000_000_000
KEY = "fact:acme:lives_in"


def belief(eid: str, town: str, at: int, **meta: Any) -> Entry:
    m = {"canonical_key": KEY, "confidence": 0.8, "last_supported_ms": at, **meta}
    return Entry(id=eid, scope="agent:a:ltm:semantic", key=KEY, created_at=at, updated_at=at,
                 value={"statement": f"Acme lives in {town}", "object": town, "status": "active",
                        "evidence": [{"at": at - 5, "stance": "support"}]},
                 metadata=m, superseded_by=meta.pop("superseded_by_", None))


def hit(e: Entry, score: float) -> ScoredEntry:
    return ScoredEntry(e, e.scope, None, 1.0, 1.0, 1.0, 1.0, 0.5, score)


def chain() -> list[ScoredEntry]:
    old = belief("b1", "Springfield", T0, status="superseded", valid_from_ms=T0 - 5,
                 valid_to_ms=T0 + 95)
    old = _superseded(old, "b2")
    new = belief("b2", "Shelbyville", T0 + 100, valid_from_ms=T0 + 95)
    raw = Entry(id="r1", scope="agent:a:working", value="Acme Corp ran the invoice job.",
                created_at=T0 + 50)
    return [hit(old, 1.1), hit(raw, 0.9), hit(new, 0.5)]


def _superseded(e: Entry, by: str) -> Entry:
    import dataclasses

    return dataclasses.replace(e, superseded_by=by, tags=frozenset({"superseded", "fact"}))


def test_default_recall_drops_replaced_versions_and_prefilters_them() -> None:
    q = MemoryQuery(query="where is acme")
    assert "superseded" in truth_filter(q).tag_filter.none_of
    out = current_truth(chain(), q, T0 + 200)
    assert [h.entry.id for h in out] == ["r1", "b2"]
    # a belief's score is moved by its confidence and freshness (never raised)
    assert 0 < out[1].score < 0.5


def test_history_on_request_never_outranks_the_current_version() -> None:
    q = MemoryQuery(query="where is acme", include_history=True)
    assert truth_filter(q) is q
    ids = [h.entry.id for h in current_truth(chain(), q, T0 + 200)]
    assert ids.index("b2") < ids.index("b1")


def test_as_of_answers_with_the_version_valid_then() -> None:
    def at(ms: int) -> list[str]:
        q = MemoryQuery(query="acme", as_of=datetime.fromtimestamp(ms / 1000, UTC))
        return [h.entry.id for h in current_truth(chain(), q, T0 + 200)]

    assert at(T0 + 10) == ["b1"]  # before the move; the raw entry did not exist yet
    assert at(T0 + 96) == ["r1", "b2"]
    assert at(T0 - 100) == []


def test_as_of_reads_each_holders_chain_on_its_own() -> None:
    """A team's belief and a member's on one key are two chains: the team's moving first
    (another member heard of the move) neither hides nor ends the member's own version."""
    import dataclasses

    team = dataclasses.replace(
        belief("t1", "Shelbyville", T0 + 50, valid_from_ms=T0 + 40),
        scope="team:ops:ltm:semantic")
    hits = [*chain(), hit(team, 1.0)]

    def at(ms: int) -> list[str]:
        q = MemoryQuery(query="acme", as_of=datetime.fromtimestamp(ms / 1000, UTC))
        return sorted(h.entry.id for h in current_truth(hits, q, T0 + 200))

    assert at(T0 + 10) == ["b1"]  # the team held nothing yet
    assert at(T0 + 60) == ["b1", "r1", "t1"]  # the member still held Springfield
    assert at(T0 + 96) == ["b2", "r1", "t1"]
    # history: each chain's current version before its own replaced ones
    q = MemoryQuery(query="acme", include_history=True)
    ids = [h.entry.id for h in current_truth(hits, q, T0 + 200)]
    assert ids.index("b2") < ids.index("b1") and "t1" in ids


def test_beliefs_written_before_valid_time_are_read_compatibly() -> None:
    e = belief("b0", "Springfield", T0)
    e = _superseded(e, "bx")
    e = Entry(**{f: getattr(e, f) for f in e.__dataclass_fields__
                 if f != "metadata"}, metadata={"canonical_key": KEY, "superseded_at": T0 + 7})
    assert belief_valid_from(e) == T0 - 5  # its earliest support
    assert belief_valid_to(e) == T0 + 7  # superseded_at


def test_as_of_input_is_checked() -> None:
    with pytest.raises(ValidationError, match="as_of"):
        MemoryQuery(as_of="2999-01-01T00:00:00Z")
    with pytest.raises(ValidationError, match="as_of"):
        MemoryQuery(as_of="last tuesday")
    assert MemoryQuery(as_of="2024-01-01T00:00:00").as_of == datetime(2024, 1, 1, tzinfo=UTC)


def message(eid: str, speaker: str, text: str, at: int) -> Entry:
    return Entry(id=eid, scope="agent:a:working", created_at=at,
                 value={"kind": "message", "speaker": speaker, "text": text})


def test_a_later_statement_about_the_same_thing_ranks_first() -> None:
    old = message("m1", "Ana", "I live in Lisbon these days.", T0)
    new = message("m2", "Ana", "Big news: I moved to Porto!", T0 + 10)
    other = message("m3", "Bo", "I live in Rome.", T0 + 20)
    assert slot_of(old) == slot_of(new) == "fact:ana:lives_in" != slot_of(other)
    hits = [hit(old, 0.9), hit(other, 0.8), hit(new, 0.7)]
    ranked = latest_first(hits)
    assert [h.entry.id for h in ranked] == ["m2", "m3", "m1"]
    # the moved hit says whose place it took (its score is below the next hit's)
    assert [h.newer_than for h in ranked] == ["m1", None, None]
    assert "ranked in the place of m1" in ranked[0].explain()
    # counts update; plain "is" only for attributes; long summaries state nothing
    assert slot_of(message("c", "Ana", "I have 3 dogs.", T0)) == "fact:ana:has:dog"
    assert slot_of(message("d", "Ana", "My favourite colour is blue.", T0)) == (
        "fact:ana-favourite-colour:is")
    assert slot_of(message("e", "Ana", "Rome is lovely.", T0)) is None
    assert slot_of(message("f", "Ana", "I live in Rome. " + "x " * 200, T0)) is None


def test_a_newer_statement_the_words_missed_is_pulled_in_first() -> None:
    """pull_updates: the question found only the old statement; the newest one on its slot
    in the same scope comes before it (what the engine's slot index answers)."""
    from retrieval.engine import SearchEngine
    from retrieval.updates import pull_updates

    old = message("m1", "Ana", "I work at Initech.", T0)
    new = message("m2", "Ana", "Since May I now work at Hooli.", T0 + 10)
    noise = message("m3", "Ana", "Work was busy today.", T0 + 20)
    eng = SearchEngine(None)
    eng.add([old, new, noise])
    assert eng.newest_on_slot("agent:a:working", "fact:ana:works_at") == new
    hits = [hit(noise, 0.9), hit(old, 0.8)]
    pulled = pull_updates(hits, eng.newest_on_slot)
    assert [h.entry.id for h in pulled] == ["m3", "m2", "m1"]
    assert [h.newer_than for h in pulled] == [None, "m1", None]
    eng.remove(["m2"])
    assert eng.newest_on_slot("agent:a:working", "fact:ana:works_at") == old
