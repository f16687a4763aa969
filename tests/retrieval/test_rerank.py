"""The second stage (speaker, neighbours, time) and pseudo-relevance feedback: the pure
functions on hand-made arrays, then their effect through SearchEngine."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np

from blackboard.entry import Entry
from memory.conversation import ConversationConfig, Message, message_requests
from retrieval import MemoryQuery, ScoringConfig, SearchEngine
from retrieval.prf import expansion_terms, rocchio
from retrieval.rerank import in_periods, named_mask, neighbour_spread

OFF = ScoringConfig(speaker_boost=0.0, neighbour_weight=0.0, time_boost=0.0)


def test_neighbour_spread_takes_best_adjacent_turn_of_same_group() -> None:
    scores = np.array([1.0, 0.2, 0.6, 0.9, 0.5])
    group = np.array([0, 0, 0, 1, -1])
    pos = np.array([4, 5, 7, 6, 5])
    out = neighbour_spread(scores, group, pos, 0.5)
    # row 1 (pos 5) is next to row 0 (pos 4); row 2 (pos 7) has no pos 6 in its group;
    # row 3 is alone in group 1; row 4 is not a message (group -1)
    assert out.tolist() == [0.1, 0.5, 0.0, 0.0, 0.0]
    assert not neighbour_spread(scores, group, pos, 0.0).any()


def test_named_mask_matches_any_word_of_a_speaker_name() -> None:
    m = named_mask(["Caroline", "Melanie", None, "Jon Snow"], "What did caroline and Snow do?")
    assert m.tolist() == [True, False, False, True]


def test_in_periods_is_inclusive() -> None:
    assert in_periods(np.array([0, 5, 10, 11]), [(5, 10)]).tolist() == [False, True, True,
                                                                         False]


def test_rocchio_moves_toward_feedback_and_stays_unit() -> None:
    q = np.array([1.0, 0.0], np.float32)
    v = rocchio(q, np.array([[0.0, 1.0]], np.float32), 1.0)
    assert np.isclose(np.linalg.norm(v), 1.0) and np.isclose(v[0], v[1])
    assert rocchio(q, np.zeros((0, 2), np.float32), 1.0) is q


def test_expansion_terms_skip_query_terms_and_weigh_idf() -> None:
    docs = [["puppi", "biscuit", "name"], ["biscuit", "walk"]]
    idf = {"puppi": 1.0, "biscuit": 2.0, "name": 0.1, "walk": 1.0}
    assert expansion_terms(docs, ["puppi"], 2, idf.__getitem__) == ["biscuit", "walk"]
    assert expansion_terms(docs, [], 0, idf.__getitem__) == []


DAY = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)


def _conversation() -> list[Entry]:
    turns = [("Ann", "I love painting sunsets", DAY),
             ("Bob", "Chess, chess, chess: I play chess", DAY + timedelta(seconds=1)),
             ("Bob", "The club meets on Sunday for a game of chess", DAY + timedelta(days=40)),
             ("Ann", "Guess what I found", DAY + timedelta(days=80)),
             ("Ann", "an old chess board in the attic, among boxes of books, lamps, photos, "
                    "letters and blankets", DAY + timedelta(days=80, seconds=1))]
    msgs = [Message(s, t, at) for s, t, at in turns]
    reqs = message_requests("s", msgs, 0, ConversationConfig(before=0, after=0))
    out = []
    for i, (m, r) in enumerate(zip(msgs, reqs, strict=True)):
        assert m.at is not None
        at = int(m.at.timestamp() * 1000)
        out.append(Entry(id=f"e{i}", scope="c", value=r.value, created_at=at, strength_at=at))
    return out


def _ids(cfg: ScoringConfig, query: str, k: int = 5) -> list[str]:
    eng = SearchEngine(None, cfg)
    eng.add(_conversation())
    return [h.entry.id for h in eng.search(MemoryQuery(query=query, max_results=k), ["c"])]


def _scores(cfg: ScoringConfig, query: str) -> dict[str, float]:
    eng = SearchEngine(None, cfg)
    eng.add(_conversation())
    return {h.entry.id: h.score for h in eng.search(MemoryQuery(query=query), ["c"])}


def test_speaker_named_in_query_lifts_their_messages() -> None:
    assert _ids(OFF, "Ann chess")[0] == "e1"  # Bob's chess turn wins on BM25 alone
    assert _ids(replace(OFF, speaker_boost=0.5), "Ann chess")[0] == "e4"
    off, on = _scores(OFF, "Ann chess"), _scores(replace(OFF, speaker_boost=0.5), "Ann chess")
    assert on["e1"] == off["e1"] and np.isclose(on["e0"] - off["e0"], 0.5)


def test_neighbour_expansion_adds_a_share_of_the_adjacent_turns_score() -> None:
    off = _scores(OFF, "Guess chess board")
    on = _scores(replace(OFF, neighbour_weight=0.5), "Guess chess board")
    # e3 (position 3) sits between e2 and e4; e1 between e0 (absent) and e2
    assert np.isclose(on["e3"] - off["e3"], 0.5 * max(off["e2"], off["e4"]))
    assert np.isclose(on["e1"] - off["e1"], 0.5 * off["e2"])


def test_time_in_query_lifts_messages_of_that_period() -> None:
    # "last month" counts from the memory's newest message (late July 2023), not today
    assert _ids(OFF, "chess last month")[0] == "e1"
    on = _scores(replace(OFF, time_boost=1.0), "chess last month")
    off = _scores(OFF, "chess last month")
    assert np.isclose(on["e2"] - off["e2"], 1.0) and on["e1"] == off["e1"]
    assert _ids(replace(OFF, time_boost=1.0), "chess last month")[0] == "e2"


def test_prf_off_by_default_and_changes_nothing_when_off() -> None:
    assert ScoringConfig().prf_docs == 0
    assert _ids(OFF, "painting") == _ids(replace(OFF, prf_docs=0, prf_terms=9), "painting")


def test_entities_are_names_the_query_does_not_say() -> None:
    from retrieval.prf import entities

    texts = ["I met Jolene at the Louvre. Jolene loves Paris!", "Oh, Paris. The Louvre too?"]
    got = entities(texts, "Who did Caroline meet in Paris?", ["Caroline"], 3)
    assert got == ["Jolene", "Louvre"]  # "Paris" is asked already; "I", "Oh", "The" are not names
    assert entities(texts, "x", [], 0) == []


def test_entity_hop_searches_the_names_of_the_first_hits() -> None:
    hop = replace(OFF, prf_docs=1, prf_dense=0.0, prf_terms=0, hop_entities=1)
    eng = SearchEngine(None, hop)
    msgs = [Message("Ann", "My sister Jolene moved to Lisbon", DAY),
            Message("Ann", "She teaches yoga now", DAY + timedelta(days=9)),
            Message("Bob", "Jolene sent me a postcard of the harbour", DAY + timedelta(days=20))]
    reqs = message_requests("s", msgs, 0, ConversationConfig(before=0, after=0))
    eng.add([Entry(id=f"e{i}", scope="c", value=r.value) for i, r in enumerate(reqs)])
    q = MemoryQuery(query="Where does Ann's sister live?", max_results=3)
    plain = SearchEngine(None, OFF)
    plain.add([Entry(id=f"e{i}", scope="c", value=r.value) for i, r in enumerate(reqs)])
    assert "e2" not in [h.entry.id for h in plain.search(q, ["c"])]
    assert "e2" in [h.entry.id for h in eng.search(q, ["c"])]  # found through "Jolene"


def test_a_long_message_is_its_own_context_and_takes_no_part_in_the_spread() -> None:
    # issue 31: a long answer glued to (or lifting) the short turns around it outranked it
    # on long user-assistant conversations (bench/ablate.py); LoCoMo has no such turn
    answer = "Sure. " + "Proof the dough overnight in the fridge. " * 20  # > 600 characters
    msgs = [Message("User", "How do I bake bread?", DAY),
            Message("Assistant", answer, DAY + timedelta(seconds=1)),
            Message("User", "Thanks, that helps", DAY + timedelta(seconds=2))]
    cfg = ConversationConfig()
    ctx = [r.value["context"] for r in message_requests("s", msgs, 0, cfg)]  # type: ignore[index]
    assert ctx == ["", "", ""]  # the answer neither takes nor lends context
    glued = message_requests("s", msgs, 0, replace(cfg, long_message_chars=0))
    assert "Proof the dough" in glued[0].value["context"]  # type: ignore[index]
    entries = [Entry(id=f"e{i}", scope="c", value=r.value)
               for i, r in enumerate(message_requests("s", msgs, 0, cfg))]

    def scores(c: ScoringConfig) -> dict[str, float]:
        eng = SearchEngine(None, c)
        eng.add(entries)
        return {h.entry.id: h.score for h in eng.search(MemoryQuery(query="bread dough"), ["c"])}

    off, on = scores(OFF), scores(replace(OFF, neighbour_weight=0.5))
    assert on == off  # the question is not lifted by the long answer next to it
    lent = scores(replace(OFF, neighbour_weight=0.5, long_message_chars=0))
    assert lent["e0"] > off["e0"]
