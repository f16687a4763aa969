"""Conversation memory on a real Redis: add_messages writes, positions, context, recall."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from redis.asyncio.connection import AbstractConnection

from blackboard import Blackboard, InvalidArgument
from memory import AgentMemory, ConversationConfig, MemoryLevel, Message
from memory.conversation import message_of
from retrieval import Retriever

DAY = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


@pytest.fixture()
async def mem(bb: Blackboard) -> AsyncIterator[AgentMemory]:
    retr = Retriever(bb, embedder=None)
    async with AgentMemory(bb, "a1", retriever=retr) as m:
        yield m
    await retr.aclose()


def _msgs(n: int, start: int = 0, at: datetime = DAY) -> list[Message]:
    return [Message("Ann" if i % 2 else "Bob", f"turn {start + i}", at + timedelta(seconds=i),
                    {"n": start + i, "nested": {"k": [1, 2]}}) for i in range(n)]


async def test_add_messages_writes_in_order_with_positions_and_metadata(
    mem: AgentMemory, bb: Blackboard
) -> None:
    out = await mem.add_messages("s1", _msgs(3))
    assert [e.scope for e in out] == ["agent:a1:ltm:episodic"] * 3
    assert [e.value["position"] for e in out] == [0, 1, 2]
    assert [e.metadata for e in out] == [{"n": i, "nested": {"k": [1, 2]}} for i in range(3)]
    stored = await bb.scope(out[1].scope).get(out[1].id)
    assert stored.metadata == {"n": 1, "nested": {"k": [1, 2]}}
    assert stored.value["speaker"] == "Ann" and stored.value["session"] == "s1"
    assert {"message", "session:s1"} <= stored.tags
    m = message_of(stored)
    assert m is not None and m.text == "turn 1" and m.at == DAY + timedelta(seconds=1)
    assert m.metadata == {"n": 1, "nested": {"k": [1, 2]}}


async def test_positions_continue_across_calls_and_processes(
    mem: AgentMemory, bb: Blackboard
) -> None:
    await mem.add_messages("s1", _msgs(2))
    second = await mem.add_messages("s1", _msgs(2, start=2))
    assert [e.value["position"] for e in second] == [2, 3]
    other = await mem.add_messages("s2", _msgs(1))
    assert other[0].value["position"] == 0
    # a new AgentMemory (another process) learns where the session stands from Redis
    async with AgentMemory(bb, "a1", default_retriever=False) as again:
        third = await again.add_messages("s1", _msgs(1, start=4))
    assert third[0].value["position"] == 4


async def test_one_round_trip_per_batch(mem: AgentMemory, monkeypatch: Any) -> None:
    await mem.add_messages("s1", _msgs(2))  # first call: registers the scope, reads the session
    sent = []
    real = AbstractConnection.send_packed_command

    async def spy(self: AbstractConnection, *a: Any, **kw: Any) -> None:
        sent.append(1)
        await real(self, *a, **kw)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", spy)
    out = await mem.add_messages("s1", _msgs(20, start=2))
    assert len(out) == 20 and len(sent) == 1


async def test_context_attached_per_scope_config(mem: AgentMemory) -> None:
    msgs = [Message("Bob", "I adopted a puppy", DAY, {"caption": "a small dog on grass"}),
            Message("Ann", "What is its name?", DAY + timedelta(seconds=1)),
            Message("Bob", "Biscuit!", DAY + timedelta(seconds=2)),
            Message("Ann", "Next day hello", DAY + timedelta(days=1))]
    out = await mem.add_messages("s", msgs)
    ctx = [e.value["context"] for e in out]
    assert ctx[1] == "Bob: I adopted a puppy [photo: a small dog on grass] | Bob: Biscuit!"
    assert "Next day" not in ctx[2]  # same_day: a new day is a new session
    assert ctx[3] == ""
    mem.configure_conversation(ConversationConfig(before=0, after=0))
    bare = await mem.add_messages("s", msgs[:2])
    assert [e.value["context"] for e in bare] == ["", ""]
    # other levels keep their own (default) configuration
    sem = await mem.add_messages("s", msgs[:2], level=MemoryLevel.SEMANTIC)
    assert sem[1].value["context"].startswith("Bob: I adopted")


async def test_recall_finds_a_message_through_its_context(mem: AgentMemory) -> None:
    msgs = [Message("Bob", "I adopted a puppy", DAY),
            Message("Bob", "We named him Biscuit", DAY + timedelta(seconds=1)),
            Message("Ann", "I went hiking in the Alps", DAY + timedelta(days=3))]
    await mem.add_messages("s", msgs)
    mem.configure_conversation(ConversationConfig(before=0, after=0), MemoryLevel.SEMANTIC)
    await mem.add_messages("s", msgs, level=MemoryLevel.SEMANTIC)
    hits = await mem.recall("adopted puppy", max_results=5)
    found = {(h.scope, h.entry.value["text"]) for h in hits}
    # only its neighbour says "puppy": found with context, not without
    assert ("agent:a1:ltm:episodic", "We named him Biscuit") in found
    assert ("agent:a1:ltm:semantic", "We named him Biscuit") not in found
    assert ("agent:a1:ltm:semantic", "I adopted a puppy") in found
    assert all(h.entry.metadata == {} for h in hits)  # the caller gave none; none added


async def test_bad_input_writes_nothing(mem: AgentMemory, bb: Blackboard) -> None:
    with pytest.raises(InvalidArgument, match="session"):
        await mem.add_messages("has space", _msgs(1))
    with pytest.raises(InvalidArgument, match="Message objects"):
        await mem.add_messages("s", [*_msgs(1), {"speaker": "x"}])  # type: ignore[list-item]
    with pytest.raises(InvalidArgument, match="speaker"):
        Message("", "hi")
    with pytest.raises(InvalidArgument, match="datetime"):
        Message("a", "hi", at="2023-05-08")  # type: ignore[arg-type]
    assert await bb.scope("agent:a1:ltm:episodic").count() == 0
    assert await mem.add_messages("s", []) == []
