"""Evidence that never dangles: snapshots on every link, the check, and its safe repair."""

from __future__ import annotations

from blackboard import Blackboard
from consolidation import TransformContext, get_transformer
from consolidation.evidence import (
    TEXT_CHARS,
    LinkState,
    check_evidence,
    link_state,
    snapshot,
    snapshot_of,
)
from tests.consolidation.cons_support import MIN, T0, make_entry


def ctx() -> TransformContext:
    return TransformContext("edge-sem", "agent:a1:ltm:semantic", now_ms=T0 + 10 * MIN)


async def test_every_link_of_a_drafted_belief_carries_its_evidence() -> None:
    es = [make_entry("f1", "Alice lives in Paris.", at=0),
          make_entry("f2", {"text": "Alice lives in Rome. " + "x" * 400}, at=1),
          make_entry("f3", "We met Alice at the station.", at=2)]
    # The batch moved Alice: its first version (Paris, from f1 alone) and the final one
    # that replaces it (every link); each link of each carries its snapshot.
    *earlier, d = await get_transformer("semantic")(es, ctx())
    for e in earlier:
        assert all(snapshot_of(make_entry("b", {}), ln) is not None
                   for ln in e.value["evidence"])
    links = {ln["entry"]: ln for ln in d.value["evidence"]}
    assert set(links) == {"f1", "f2", "f3"}  # two facts and one context link
    for eid, ln in links.items():
        assert ln["scope"] == "agent:a1:stm" and ln["author"] == "a1"
        assert snapshot_of(make_entry("b", {}), ln) is not None
        assert link_state(make_entry("b", {}), ln, live=False) is LinkState.KEPT
        assert ln["text"].startswith({"f1": "Alice lives in Paris", "f2": "Alice lives in Rome",
                                      "f3": "We met Alice"}[eid])
    assert len(links["f2"]["text"]) == TEXT_CHARS and links["f2"]["text"].endswith("…")
    assert links["f1"]["object"] == "Paris" and links["f1"]["negated"] is False


def test_a_bare_link_is_broken_once_its_entry_is_gone() -> None:
    b = make_entry("b", {"evidence": [{"entry": "f1"}]})
    assert link_state(b, {"entry": "f1"}, live=True) is LinkState.LIVE
    assert link_state(b, {"entry": "f1"}, live=False) is LinkState.BROKEN
    kept = make_entry("b", {}, evidence_kept={"f1": snapshot(make_entry("f1", "hi"))})
    assert link_state(kept, {"entry": "f1"}, live=False) is LinkState.KEPT


async def _belief(bb: Blackboard, links: list[dict[str, object]]) -> str:
    e = await bb.scope("agent:a1:ltm:semantic").write(
        {"statement": "Alice lives in Paris", "canonical_key": "fact:alice:lives_in",
         "evidence": links}, tags={"fact"}, metadata={"canonical_key": "fact:alice:lives_in"})
    return e.id


async def test_check_reports_broken_links_and_repair_keeps_what_is_safe(bb: Blackboard) -> None:
    stm = bb.scope("agent:a1:stm")
    alive = await stm.write("Alice lives in Paris.", author="a1")
    merged = await stm.write("Alice lives in Paris!", author="a1")
    gone = await stm.write("Alice lives in Paris?", author="a1")
    # dedupe's way: the survivor names what it merged, the merged entry is deleted
    await stm.update(alive.id, metadata={"merged_from": [merged.id]})
    await stm.delete(merged.id)
    await stm.delete(gone.id)
    snap = {"entry": gone.id, **snapshot(gone)}  # a new-style link: kept with the belief
    bid = await _belief(bb, [{"entry": alive.id}, {"entry": merged.id}, {"entry": "0" * 26},
                             snap])
    rep = await check_evidence(bb)
    assert rep.beliefs == 1
    assert rep.links == {"live": 1, "kept": 1, "broken": 2}
    assert {i for _, _, i in rep.broken} == {merged.id, "0" * 26}

    fixed = await check_evidence(bb, repair=True)
    assert fixed.repaired == 2 and [i for _, _, i in fixed.broken] == ["0" * 26]
    b = await bb.scope("agent:a1:ltm:semantic").get(bid)
    kept = b.metadata["evidence_kept"]
    assert kept[merged.id]["via"] == alive.id and "via" not in kept[alive.id]
    assert b.value["evidence"][0] == {"entry": alive.id}  # the claim's links untouched
    await stm.delete(alive.id)  # the live one may go now: its snapshot answers
    again = await check_evidence(bb)
    assert again.links == {"live": 0, "kept": 3, "broken": 1}
