"""Prompt-ready context (issue 27 item 3): beliefs first with their confidence, when last
supported and evidence count, then memories with citation ids; never over the budget, no
entry or statement twice; bad budgets and queries refused with nothing written."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from blackboard import Blackboard, Entry, InvalidArgument
from memory import AgentMemory
from memory.context import MAX_BUDGET_TOKENS, assemble, estimate_tokens
from retrieval import ScoredEntry

T0 = 1_683_504_000_000  # 2023-05-08


def _hit(e: Entry) -> ScoredEntry:
    return ScoredEntry(e, e.scope, None, None, 0.5, 1.0, 0.5, 0.5, 0.5)


def _memory(i: int, text: str, scope: str = "agent:a1:stm") -> Entry:
    return Entry(id=f"m{i:02d}", scope=scope, value=text, created_at=T0 + i)


def _belief(i: int, said: str, status: str = "active", **meta: object) -> Entry:
    return Entry(id=f"b{i:02d}", scope="agent:a1:ltm:semantic", created_at=T0,
                 value={"statement": said, "status": status, "evidence": [{}, {}]},
                 metadata={"canonical_key": f"fact:k{i}", "status": status,
                           "confidence": 0.82, "last_supported_ms": T0, **meta})


def test_beliefs_come_first_with_confidence_last_support_and_evidence() -> None:
    hits = [_hit(_memory(1, "Caroline went to a support group.")),
            _hit(_belief(1, "Acme Corp lives in Shelbyville", source_count=5)),
            _hit(_belief(2, "Acme Corp lives in Springfield", status="invalidated"))]
    c = assemble(hits, 1500)
    assert c.text.splitlines() == [
        "Current beliefs (confidence; last supported; evidence):",
        "- [b1] Acme Corp lives in Shelbyville (high 0.82; 2023-05-08; 5 evidence)",
        "Relevant memories:",
        "- [m1] 2023-05-08 Caroline went to a support group.",
    ]
    assert {k: e.id for k, e in c.citations.items()} == {"b1": "b01", "m1": "m01"}
    assert c.tokens == estimate_tokens(c.text) <= 1500 and c.left_out == 0


def test_a_message_is_cited_with_its_speaker_and_day_not_its_context() -> None:
    e = Entry(id="x", scope="agent:a1:episodic", created_at=T0 + 9 * 86_400_000,
              value={"kind": "message", "speaker": "Melanie", "text": "I painted a lake.",
                     "at": "2023-05-08T13:56:00+00:00"},
              metadata={"context": "Caroline: what did you paint?"})
    assert assemble([_hit(e)], 100).text.splitlines()[1] == (
        "- [m1] 2023-05-08 Melanie: I painted a lake.")


def test_the_same_statement_from_two_entries_is_said_once() -> None:
    hits = [_hit(_memory(1, "Globex prefers email invoices.")),
            _hit(_memory(2, "Globex prefers email invoices.", scope="team:t1")),
            _hit(_memory(3, "Initech has a billing portal."))]
    c = assemble(hits, 1500)
    assert sorted(e.id for e in c.citations.values()) == ["m01", "m03"]


def test_what_does_not_fit_is_left_out_and_a_shorter_one_after_it_still_fits() -> None:
    hits = [_hit(_memory(1, "short one")), _hit(_memory(2, "long " * 300)),
            _hit(_memory(3, "short two"))]
    c = assemble(hits, 40)
    assert [e.id for e in c.citations.values()] == ["m01", "m03"]
    assert c.left_out == 1 and c.tokens <= 40


@settings(max_examples=200, deadline=None)
@given(texts=st.lists(st.text(min_size=1, max_size=600), max_size=30),
       beliefs=st.lists(st.text(min_size=1, max_size=200), max_size=5),
       budget=st.integers(min_value=1, max_value=3000))
def test_never_over_the_budget_and_no_entry_twice(texts: list[str], beliefs: list[str],
                                                  budget: int) -> None:
    hits = [_hit(_belief(i, b)) for i, b in enumerate(beliefs)]
    hits += [_hit(_memory(i, t)) for i, t in enumerate(texts)]
    c = assemble(hits, budget)
    assert c.tokens == (estimate_tokens(c.text) if c.text else 0) <= budget
    ids = [e.id for e in c.citations.values()]
    assert len(ids) == len(set(ids))
    assert all(f"[{k}]" in c.text for k in c.citations)


@pytest.fixture()
async def mem(bb: Blackboard) -> AsyncIterator[AgentMemory]:
    async with AgentMemory(bb, "a1") as m:
        yield m


async def test_context_cites_what_answers_the_query(mem: AgentMemory) -> None:
    await mem.store("Acme Corp pays its invoices on net-30 terms.", "stm")
    await mem.store("The deploy of the billing service failed at the migration.", "stm")
    await mem.store("Caroline likes hiking in the mountains.", "semantic")
    c = await mem.context("what are Acme's payment terms?", budget_tokens=60)
    first = next(iter(c.citations.values()))
    assert first.text.startswith("Acme Corp pays") and c.tokens <= 60
    assert "[m1]" in c.text and "net-30" in c.text


@pytest.mark.parametrize("budget", [0, -5, MAX_BUDGET_TOKENS + 1, 10**12, 2.5, "100", True])
async def test_a_bad_budget_is_refused_naming_it(mem: AgentMemory, budget: object) -> None:
    with pytest.raises(InvalidArgument, match="budget_tokens"):
        await mem.context("anything", budget_tokens=budget)  # type: ignore[arg-type]


async def test_an_empty_query_is_refused(mem: AgentMemory, bb: Blackboard) -> None:
    with pytest.raises(InvalidArgument, match="query"):
        await mem.context("   ")
    assert await bb.scope_ids() == []  # nothing written
