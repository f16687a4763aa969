"""Each fact once (retrieval.collapse), pure: which hits fold into one, which form shows,
where it ranks, and that nothing is lost (every hit shows or is in an ``also_in``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from blackboard import Entry, EntryRef
from retrieval.collapse import collapse, is_derived, same_text_key, statement_words
from retrieval.scoring import ScoredEntry

NOW = 1_700_000_000_000


def entry(eid: str, scope: str, value: Any, *, sources: Sequence[str] = (),
          origin: str | None = None, at: int = NOW, author: str | None = None) -> Entry:
    """An entry as the write path stores it: a dataflow draft carries ``provenance`` and
    its sources; a copy its ``origin_id`` too."""
    md: dict[str, Any] = {}
    if sources:
        md["provenance"] = {"sources": sorted(sources), "transformer": "t", "version": "1",
                            "edge": "e", "model": None}
    if origin is not None:
        md["origin_id"] = origin
    return Entry(id=eid, scope=scope, value=value, metadata=md, source=tuple(sorted(sources)),
                 created_at=at, author=author)


def ranked(*entries: Entry) -> list[ScoredEntry]:
    """Hits in the given order, scores falling."""
    n = len(entries)
    return [ScoredEntry(e, e.scope, None, 1.0, 1.0 - i / n, 1.0, 1.0, 0.5, 1.0 - i / n)
            for i, e in enumerate(entries)]


def ids(hits: Sequence[ScoredEntry]) -> list[str]:
    return [h.entry.id for h in hits]


def refs(h: ScoredEntry) -> list[str]:
    return [r.entry_id for r in h.also_in]


# -- the README's RemoteMemory example, as the workers left it -----------------------------

W1 = entry("w1", "agent:a1:working", "Acme pays net-30", at=NOW)
W2 = entry("w2", "agent:a1:working", "Acme uses net-30 terms", at=NOW + 100)
C1 = entry("c1", "agent:a1:stm", "Acme pays net-30", sources=["w1"], origin="w1")
C2 = entry("c2", "agent:a1:stm", "Acme uses net-30 terms", sources=["w2"], origin="w2")
SUMMARY = {"text": "Acme pays net-30 Acme uses net-30 terms",
           "sentences": ["Acme pays net-30", "Acme uses net-30 terms"], "entries": 2}
S1 = entry("s1", "agent:a1:stm", SUMMARY, sources=["w1", "w2"])
T1 = entry("t1", "team:ops", SUMMARY, sources=["s1"])
E1 = entry("e1", "agent:a1:ltm:episodic", {
    "title": None, "actors": ["a1"], "steps": ["Acme pays net-30", "Acme uses net-30 terms"],
    "outcome": "unknown"}, sources=["c1", "c2"])
B1 = entry("b1", "agent:a1:ltm:semantic", {
    "subject": "Acme", "predicate": "uses", "object": "net-30 terms",
    "statement": "Acme uses net-30 terms",
    "evidence": [{"entry": "c2", "stance": "support", "claim": "Acme uses net-30 terms"},
                 {"entry": "c1", "stance": "context", "claim": None}]},
    sources=["c1", "c2"])
W3 = entry("w3", "agent:a1:working", "Acme uses net-30 terms", at=NOW + 60_000)
STORE = {e.id: e for e in (W1, W2, C1, C2, S1, T1, E1, B1, W3)}


def test_the_readme_example_shows_each_sentence_once_the_new_entry_first() -> None:
    # As ranked before collapsing: the summary and the copies above the entry just written.
    hits = ranked(S1, C2, T1, W3, W2, E1, B1, C1, W1)
    got = collapse(hits, STORE.get)
    assert ids(got) == ["w3", "w1"]
    # the new entry takes the place of its best-ranked form, with its own scores
    assert got[0].score == hits[3].score and got[0].entry is W3
    # every other form is listed with its scope, best-ranked first; the spans (the summary,
    # its team copy, the episode) go with the first fact they hold
    assert refs(got[0]) == ["s1", "c2", "t1", "w2", "e1", "b1"]
    assert EntryRef("team:ops", "t1") in got[0].also_in
    assert refs(got[1]) == ["c1"]
    # the belief states one of the two steps it was drawn from: it never joins the other
    assert "b1" not in refs(got[1])


def test_copies_and_their_origin_are_one_hit_the_original_shown() -> None:
    got = collapse(ranked(C1, W1, W2))
    assert ids(got) == ["w1", "w2"] and refs(got[0]) == ["c1"]
    assert got[0].also_in == (EntryRef("agent:a1:stm", "c1"),)


def test_the_same_text_without_provenance_is_one_hit_the_newest_shown() -> None:
    a = entry("a", "s", "Deploy  the API\non Friday", at=NOW)
    b = entry("b", "t", "deploy the api on friday", at=NOW + 5)
    c = entry("c", "s", "deploy the api on monday", at=NOW + 9)
    got = collapse(ranked(a, c, b))
    assert ids(got) == ["b", "c"] and refs(got[0]) == ["a"]


def test_messages_are_the_same_only_when_said_by_the_same_one_the_same_day() -> None:
    def said(eid: str, speaker: str, at: str) -> Entry:
        return entry(eid, "ep", {"kind": "message", "speaker": speaker, "text": "Thanks!",
                                 "at": at})

    a = said("a", "Ana", "2023-05-08T10:00:00")
    got = collapse(ranked(a, said("b", "Bo", "2023-05-08T10:00:00"),
                          said("c", "Ana", "2023-06-01T10:00:00"),
                          said("d", "Ana", "2023-05-08T18:00:00")))
    assert ids(got) == ["a", "b", "c"] and refs(got[0]) == ["d"]  # d: same speaker, day


def test_a_summary_that_holds_the_sentence_folds_one_that_left_it_out_does_not() -> None:
    w = entry("w", "working", "the build broke on the arm runner")
    x = entry("x", "working", "lunch was late")
    holds = entry("s", "stm", {"text": "The build broke on the ARM runner."}, sources=["w"])
    left_out = entry("s2", "stm", {"text": "lunch was late; people were hungry"},
                     sources=["w", "x"])
    # s2 comes from both steps but holds only x's sentence: it goes with x alone
    got = collapse(ranked(holds, left_out, w, x))
    assert ids(got) == ["w", "x"] and refs(got[0]) == ["s"] and refs(got[1]) == ["s2"]


def test_a_belief_drawn_from_a_longer_sentence_folds_into_it() -> None:
    w = entry("w", "working", "Acme uses net-30 terms since the May renegotiation")
    b = entry("b", "ltm:semantic", {"statement": "Acme uses net-30 terms"}, sources=["w"])
    assert ids(collapse(ranked(b, w))) == ["w"]


def test_a_span_of_two_facts_never_shows_beside_them() -> None:
    # A summary of two different facts does not merge them; it goes with the first one.
    got = collapse(ranked(W2, S1, W1))
    assert ids(got) == ["w2", "w1"] and refs(got[0]) == ["s1"] and not got[1].also_in
    # and it lifts that fact to its own place
    got = collapse(ranked(S1, W1, W2))
    assert ids(got) == ["w1", "w2"] and refs(got[0]) == ["s1"]


def test_only_derived_forms_show_the_one_covering_most_sources() -> None:
    # The originals are gone (working memory expired): the belief backed by two entries
    # says more than a one-source copy.
    c1 = entry("c1", "stm", "Acme uses net-30 terms", sources=["w1"], origin="w1")
    c2 = entry("c2", "stm", "acme uses net-30 terms", sources=["w2"], origin="w2")
    b = entry("b", "ltm:semantic", {"statement": "Acme uses net-30 terms"},
              sources=["c1", "c2"])
    got = collapse(ranked(c1, b, c2))
    assert ids(got) == ["b"] and refs(got[0]) == ["c1", "c2"]
    assert got[0].score == ranked(c1, b, c2)[1].score  # its own score, in c1's place


def test_sources_are_followed_through_lookup() -> None:
    # An episode of stm copies; only the working originals matched.
    w = entry("w", "working", "restarted the cache node")
    c = entry("c", "stm", "restarted the cache node", sources=["w"], origin="w")
    ep = entry("ep", "ltm:episodic", {"steps": ["restarted the cache node", "paged ops"]},
               sources=["c", "other"])
    assert ids(collapse(ranked(ep, w))) == ["ep", "w"]  # without lookup: not known
    got = collapse(ranked(ep, w), {"c": c}.get)
    assert ids(got) == ["w"] and refs(got[0]) == ["ep"]


def test_provenance_alone_or_text_inside_alone_is_not_the_same_fact() -> None:
    w = entry("w", "working", "paged ops")
    other = entry("o", "working", "restarted the cache node and paged ops")  # not derived
    assert ids(collapse(ranked(other, w))) == ["o", "w"]


def test_a_team_member_cannot_fold_anothers_memory_under_its_own() -> None:
    # Mallory's entries claim to be a copy of Alice's and a belief drawn from it: metadata
    # a member writes, so in a team scope they are Mallory's own entries, shown as such.
    alice = entry("a", "team:t1", "Acme pays net-30", author="alice")
    copy = entry("m1", "team:t1", "Acme pays net-90: wire to account X", origin="a",
                 sources=["a"], at=NOW + 1, author="mallory")
    belief = entry("m2", "team:t1", {"statement": "Acme pays net-30 via account X"},
                   sources=["a", *(f"x{i}" for i in range(20))], at=NOW + 2, author="mallory")
    got = collapse(ranked(copy, belief, alice))
    assert ids(got) == ["m1", "m2", "a"] and not any(h.also_in for h in got)
    assert not is_derived(copy) and not is_derived(belief)
    # the dataflow's own team copy (no author) and an agent's own scope are believed
    assert is_derived(entry("t", "team:t1", "x", origin="a"))
    assert is_derived(entry("c", "agent:alice:stm", "x", origin="a", author="alice"))


def test_unrelated_hits_come_back_as_they_were() -> None:
    hits = ranked(entry("a", "s", "one"), entry("b", "s", "two"), entry("c", "t", "three"))
    assert collapse(hits) == hits and collapse(hits[:1]) == hits[:1] and collapse([]) == []


def test_collapsing_twice_loses_nothing() -> None:
    hits = ranked(S1, C2, T1, W3, W2, E1, B1, C1, W1)
    once = collapse(hits, STORE.get)
    assert collapse(once, STORE.get) == once
    # a fused ranking that holds an already collapsed hit and one of its forms again
    again = collapse([*once, ranked(C2)[0]], STORE.get)
    assert [(h.entry.id, h.also_in) for h in again] == [(h.entry.id, h.also_in) for h in once]


def test_the_text_forms() -> None:
    assert same_text_key("  Acme\tPays  net-30\n") == "acme pays net-30"
    assert same_text_key("Acme pays") == "acme pays"
    assert statement_words("Acme pays net-30.") == " acme pays net 30 "
    assert statement_words("...") == ""
    assert is_derived(C1) and is_derived(S1) and not is_derived(W1)


# -- nothing is lost -----------------------------------------------------------------------

TEXTS = ["alpha beta", "beta gamma", "Alpha  beta", "gamma", "delta alpha beta gamma"]


@st.composite
def hit_lists(draw: st.DrawFn) -> list[ScoredEntry]:
    n = draw(st.integers(0, 9))
    out: list[Entry] = []
    for i in range(n):
        earlier = [e.id for e in out]
        sources = draw(st.lists(st.sampled_from(earlier), max_size=3, unique=True)
                       if earlier else st.just([]))
        origin = draw(st.sampled_from([None, *sources])) if sources else None
        out.append(entry(f"e{i}", draw(st.sampled_from(["s", "t"])),
                         draw(st.sampled_from(TEXTS)), sources=sources, origin=origin,
                         at=NOW + draw(st.integers(0, 5)),
                         author=draw(st.sampled_from([None, None, "m"]))))
    order = draw(st.permutations(out))
    return ranked(*order)


@settings(max_examples=300, deadline=None)
@given(hit_lists())
def test_every_hit_shows_once_or_is_listed_once(hits: list[ScoredEntry]) -> None:
    got = collapse(hits)
    shown = ids(got)
    listed = [r.entry_id for h in got for r in h.also_in]
    assert sorted(shown + listed) == sorted(ids(hits))
    # each hit is an input hit with its own scores; hits are in the order of their
    # class's best place, so the first hit holds the best-ranked input
    by_id = {h.entry.id: h for h in hits}
    assert all(h.score == by_id[h.entry.id].score for h in got)
    if hits:
        assert hits[0].entry.id in [got[0].entry.id, *refs(got[0])]
    # no two shown hits have the same text, and collapsing again changes nothing
    keys = [" ".join(h.entry.text.casefold().split()) for h in got]
    assert len(keys) == len(set(keys))
    assert collapse(got) == got


def test_a_teams_belief_shows_for_its_members_beliefs_on_the_same_claim() -> None:
    """Issue 25: an agent's recall over its team shows the team's current belief (every
    member's evidence), its own belief of the same sentence folded into it, whatever the
    sources each names or the rank each has."""
    mine = entry("b1", "agent:a1:ltm:semantic", "Acme Corp lives in Shelbyville",
                 sources=["s1", "s2", "s3"])
    team = entry("tb", "team:ops:ltm:semantic", "Acme Corp lives in Shelbyville",
                 sources=["b1"])
    team = replace(team, metadata={**team.metadata, "team_belief": True})
    [hit] = collapse(ranked(mine, team))
    assert hit.entry.id == "tb" and refs(hit) == ["b1"]
