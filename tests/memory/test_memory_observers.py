"""The agent observes memory: on_change handlers over readable scope feeds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from blackboard import AccessDenied, Blackboard, Event, EventType
from memory import AgentMemory, MemoryLevel


@pytest.fixture()
async def mem(bb: Blackboard) -> AsyncIterator[AgentMemory]:
    async with AgentMemory(bb, "a1", teams=["t1"]) as m:
        yield m


async def _until(cond: Callable[[], bool], limit_s: float = 5.0) -> None:
    async with asyncio.timeout(limit_s):
        while not cond():  # noqa: ASYNC110 - polls handler side effects, bounded wait
            await asyncio.sleep(0.01)


async def test_on_change_own_team_and_collective(mem: AgentMemory, bb: Blackboard) -> None:
    seen: list[Event] = []
    async_seen: list[Event] = []

    async def ahandler(ev: Event) -> None:
        async_seen.append(ev)

    h1 = mem.on_change("agent:*:*", seen.append, block_ms=100)  # only a1's are readable
    h2 = mem.on_change("team:t1", ahandler, block_ms=100)
    h3 = mem.on_change("collective", seen.append, block_ms=100)
    for h in (h1, h2, h3):
        await h.ready()
    # '*' is one segment: the agent's three short-term levels, not ltm:* nor agent a2's.
    assert h1.scopes == ("agent:a1:sensory", "agent:a1:stm", "agent:a1:working")
    mine = await mem.store("x", level=MemoryLevel.STM, tags={"t"})
    await bb.scope("agent:a2:working").write("other agent")  # not delivered
    team = await mem.store("y", level=None, team="t1")
    col = await bb.scope("collective").write("z")
    await _until(lambda: len(seen) >= 2 and len(async_seen) >= 1)
    assert {(e.scope, e.entry_id) for e in seen} == {("agent:a1:stm", mine.id),
                                                     ("collective", col.id)}
    assert [(e.scope, e.entry_id, e.type) for e in async_seen] == [
        ("team:t1", team.id, EventType.WRITTEN)]
    await h1.stop()
    assert not h1.running
    await mem.store("after stop", level=MemoryLevel.STM)
    await asyncio.sleep(0.3)
    assert len(seen) == 2


async def test_on_change_filters_and_handler_errors(mem: AgentMemory) -> None:
    got: list[Event] = []

    def flaky(ev: Event) -> None:
        if "bad" in ev.tags:
            raise RuntimeError("handler bug")
        got.append(ev)

    h = mem.on_change("agent:a1:working", flaky, tags={"keep"}, block_ms=100)
    deleted: list[Event] = []
    h2 = mem.on_change("agent:a1:working", deleted.append, types={EventType.DELETED},
                       block_ms=100)
    await h.ready()
    await h2.ready()
    await mem.store("1", tags={"keep", "bad"})
    await mem.store("2", tags={"drop"})
    e3 = await mem.store("3", tags={"keep"})
    await mem.forget(e3.id)
    await _until(lambda: len(got) >= 2 and len(deleted) >= 1)
    assert [(e.entry_id, e.type) for e in got] == [(e3.id, EventType.WRITTEN),
                                                   (e3.id, EventType.DELETED)]
    assert h.handler_errors == 1 and h.running
    assert [e.entry_id for e in deleted] == [e3.id]
    h.cancel()
    await h2.stop()


async def test_on_change_access_denied(mem: AgentMemory) -> None:
    for pattern in ("agent:a2:working", "agent:a2:*", "team:t2", "team:t2:*", "bogus"):
        with pytest.raises(AccessDenied, match=pattern.replace("*", r"\*")):
            mem.on_change(pattern, lambda ev: None)
