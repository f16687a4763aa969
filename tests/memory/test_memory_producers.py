"""Producers: @mem.observe on sync, async and raising callables."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from blackboard import Blackboard
from memory import AgentMemory, MemoryLevel, MemoryQuery, TagFilter
from memory.producers import CallRecord, Observation


@pytest.fixture()
async def mem(bb: Blackboard) -> AsyncIterator[AgentMemory]:
    async with AgentMemory(bb, "a1", teams=["t1"]) as m:
        yield m


def _newest(**tags: set[str]) -> MemoryQuery:
    return MemoryQuery(order="newest", tag_filter=TagFilter(**tags))


async def test_observe_async_success_and_failure(mem: AgentMemory) -> None:
    @mem.observe(level=MemoryLevel.WORKING, tags={"action"})
    async def search(q: str, *, k: int = 3) -> list[str]:
        return [q] * k

    @mem.observe(tags={"action"})
    async def boom(x: int) -> None:
        raise ValueError(f"bad {x}")

    assert await search("q", k=2) == ["q", "q"]
    with pytest.raises(ValueError, match="bad 7"):
        await boom(7)
    got = await mem.recall(_newest(all_of={"action"}))
    assert len(got) == 2
    fail, ok = (h.entry for h in got)
    assert ok.tags == {"action", "action_type:search", "success"}
    assert ok.value == {"call": "search", "args": ["q"], "kwargs": {"k": 2},
                        "result": ["q", "q"]}
    assert ok.metadata["producer"] == "search" and ok.metadata["duration_ms"] >= 0
    assert fail.tags == {"action", "action_type:boom", "failure"}
    assert fail.value["error"] == "ValueError('bad 7')" and "result" not in fail.value
    assert search.__name__ == "search"  # functools.wraps


async def test_observe_sync_inside_loop_schedules_write(mem: AgentMemory) -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "Opaque()"

    @mem.observe(level=MemoryLevel.STM)
    def add(a: int, b: int) -> int:
        return a + b

    @mem.observe(level=MemoryLevel.STM)
    def fails(o: object) -> None:
        raise KeyError("k")

    @mem.observe
    def bare() -> Opaque:
        return Opaque()

    assert add(2, 3) == 5
    with pytest.raises(KeyError):
        fails(Opaque())
    assert isinstance(bare(), Opaque)
    await mem.flush()
    stm = [h.entry for h in await mem.recall(MemoryQuery(order="newest", levels=["stm"]))]
    by_tag = {next(t for t in e.tags if t.startswith("action_type:")): e for e in stm}
    assert by_tag["action_type:add"].value["result"] == 5
    assert "success" in by_tag["action_type:add"].tags
    assert by_tag["action_type:fails"].value["args"] == ["Opaque()"]
    assert "failure" in by_tag["action_type:fails"].tags
    w = [h.entry for h in await mem.recall(_newest(all_of={"action_type:bare"}))]
    assert w[0].value["result"] == "Opaque()" and w[0].scope == "agent:a1:working"


async def test_observe_sync_outside_loop_uses_bridge(mem: AgentMemory) -> None:
    @mem.observe(tags={"thread"}, level=None, team="t1")
    def work(x: int) -> int:
        return x * 2

    # A worker thread has no running loop: the write goes through the bridge, blocking.
    assert await asyncio.to_thread(work, 21) == 42
    got = [h.entry for h in await mem.recall(_newest(all_of={"thread"}))]
    assert len(got) == 1 and got[0].scope == "team:t1" and got[0].value["result"] == 42
    assert mem.producer_errors == 0


async def test_bridge_writes_through_store(mem: AgentMemory, bb: Blackboard) -> None:
    # The blocking path ends in the same AgentMemory.store as the async one: the scope is
    # registered with its level's defaults (sensory: a TTL) on the twin's connection.
    @mem.observe(level=MemoryLevel.SENSORY, tags={"raw"})
    def sense(x: int) -> int:
        return x

    assert await asyncio.to_thread(sense, 1) == 1
    got = [h.entry for h in await mem.recall(_newest(all_of={"raw"}))]
    assert len(got) == 1 and got[0].scope == "agent:a1:sensory"
    assert 0 < got[0].expires_at - got[0].created_at <= 300_000
    assert (await bb.scope("agent:a1:sensory").policy()).ttl == 300
    await mem.aclose()  # closes the twin and its connection, then the bridge thread
    assert mem.producers._bridge is None and mem.producer_errors == 0


async def test_custom_extractor_and_skip(mem: AgentMemory) -> None:
    def extract(call: CallRecord) -> Observation | None:
        if call.args[0] == "skip":
            return None
        return Observation({"said": call.result}, tags=frozenset({"speech"}),
                           metadata={"len": len(call.result)})

    @mem.observe(extractor=extract)
    async def say(text: str) -> str:
        return text.upper()

    assert await say("hi") == "HI"
    assert await say("skip") == "SKIP"
    got = [h.entry for h in await mem.recall(_newest(all_of={"speech"}))]
    assert [e.value for e in got] == [{"said": "HI"}] and got[0].metadata["len"] == 2


async def test_producer_failure_is_counted_not_raised(
    mem: AgentMemory, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(call: CallRecord) -> object:
        raise RuntimeError("extractor bug")

    @mem.observe(extractor=broken)
    async def f() -> int:
        return 1

    @mem.observe(extractor=lambda call: {"big": "x" * (2 << 20)})
    def g() -> int:
        return 2

    with caplog.at_level(logging.ERROR, logger="memory.agent"):
        assert await f() == 1
        assert g() == 2
        await mem.flush()
    assert mem.producer_errors == 2
    assert "failed to record" in caplog.text
