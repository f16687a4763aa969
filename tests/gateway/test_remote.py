"""``RemoteMemory`` against a real gateway process: the same scenario as the
``AgentMemory`` tests (tests/memory/test_memory_agent.py: store, list tags, access to
another agent's and other teams' scopes) runs unchanged on both, the second only by
changing the constructor; errors arrive as the library's types; ``on_change`` resumes;
``.sync()`` blocks."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from blackboard import (
    AccessDenied,
    Blackboard,
    EntryTooLarge,
    Event,
    EventType,
    InvalidArgument,
    InvalidTag,
    NotFound,
    VersionConflict,
)
from gateway.tokens import parse_token
from memory import AgentMemory, MemoryLevel, MemoryQuery, TagFilter
from memory.remote import RemoteMemory
from tests.gateway.gateway_support import ROOT, GatewayProc

Opener = Callable[[str, list[str]], Any]


async def scenario(mem: Any, other: Any) -> None:
    """Adapted from test_store_writes_level_scope_and_registers_it, test_list_tags and
    test_access_denied_on_other_agents_scopes: ``mem`` is a1 of team t1, ``other`` a2 of
    t1; only the AgentMemory API is used."""
    e = await mem.store({"x": 1}, level=MemoryLevel.WORKING, tags={"action"}, key="k1",
                        metadata={"m": 1}, importance=0.7)
    assert e.scope == "agent:a1:working" and e.tags == {"action"} and e.importance == 0.7
    assert e.value == {"x": 1} and e.metadata == {"m": 1} and e.key == "k1"
    assert (await mem.store("fact", level=MemoryLevel.SEMANTIC)).scope == "agent:a1:ltm:semantic"
    assert (await mem.store("shared", level=None, team="t1")).scope == "team:t1"
    own_ttl = await mem.store("raw", level=MemoryLevel.SENSORY, ttl=10)
    assert own_ttl.expires_at - own_ttl.created_at == 10_000
    with pytest.raises(AccessDenied, match="team:t2"):
        await mem.store("x", level=None, team="t2")

    await mem.store("a", tags={"x", "y"})
    await mem.store("b", tags={"x"})
    await mem.store("c", tags={"x"}, level=MemoryLevel.STM)
    assert await mem.list_tags(MemoryLevel.WORKING) == {"action": 1, "x": 2, "y": 1}
    assert await mem.list_tags(MemoryLevel.STM) == {"x": 1}
    assert await mem.list_tags() == {"action": 1, "x": 3, "y": 1}

    private = await other.store("secret")
    shared = await other.store("team note", level=None, team="t1", tags={"note"})
    with pytest.raises(AccessDenied, match="agent:a2:working"):
        await mem.recall(MemoryQuery(scopes=["agent:a2:working"]))
    with pytest.raises(AccessDenied, match="agent:a2:working"):
        await mem.forget(private.id, scope="agent:a2:working")
    with pytest.raises(NotFound):
        await mem.forget(private.id)  # only the agent's own scopes are searched
    got = await mem.recall(MemoryQuery(scopes=["team:t1"], tag_filter=TagFilter(
        all_of=frozenset({"note"}))))
    assert [h.entry.id for h in got] == [shared.id] and got[0].scope == "team:t1"
    hits = await mem.recall("team note", explain=True)
    assert hits[0].entry.id == shared.id and hits[0].bm25 and hits[0].score > 0
    assert all(not h.scope.startswith("agent:a2") for h in hits)
    assert await mem.forget(shared.id) is True
    with pytest.raises(AccessDenied):
        await mem.list_tags(MemoryLevel.WORKING, team="t9")
    m = await mem.memory_map()
    assert m.agent == "a1" and m.scope("agent:a1:working") is not None
    assert m.scope("agent:a2:working") is None
    stats = await mem.stats()
    assert stats["agent:a1:working"].count == 3
    pool = stats["agent:a1:working"].pool  # the pool statistics come over REST too
    assert pool is not None and pool.agents == {"a1": 3} and pool.evicted_total == 0


@asynccontextmanager
async def in_process(gw: GatewayProc, tokens: dict[str, str]) -> AsyncIterator[Opener]:
    """AgentMemory on a connection logged in as each token's Redis user (as the gateway
    serves it)."""
    boards: list[Blackboard] = []
    mems: list[AgentMemory] = []

    async def open_(agent: str, teams: list[str]) -> AgentMemory:
        c = parse_token(tokens[agent])
        bb = await Blackboard.connect(gw.redis.url, username=c.user, password=c.password)
        boards.append(bb)
        mems.append(AgentMemory(bb, agent, teams))
        return mems[-1]

    try:
        yield open_
    finally:
        for mem in mems:
            await mem.aclose()
        for bb in boards:
            await bb.close()


@asynccontextmanager
async def remote(gw: GatewayProc, tokens: dict[str, str]) -> AsyncIterator[Opener]:
    mems: list[RemoteMemory] = []

    async def open_(agent: str, teams: list[str]) -> RemoteMemory:
        mems.append(RemoteMemory(gw.url, tokens[agent]))
        return mems[-1]

    try:
        yield open_
    finally:
        for mem in mems:
            await mem.aclose()


@pytest.mark.parametrize("side", [in_process, remote], ids=["AgentMemory", "RemoteMemory"])
async def test_same_scenario_in_process_and_remote(gateway: GatewayProc, side: Any) -> None:
    tokens = {"a1": gateway.token("a1", ["t1"]), "a2": gateway.token("a2", ["t1"])}
    async with side(gateway, tokens) as open_:
        await scenario(await open_("a1", ["t1"]), await open_("a2", ["t1"]))


async def test_errors_arrive_as_library_types(gateway: GatewayProc) -> None:
    async with RemoteMemory(gateway.url, gateway.token("a1", ["t1"])) as mem:
        e = await mem.store("v1", tags={"x"})
        got = await mem.get(e.id)
        assert got.value == "v1" and got.version == e.version
        up = await mem.update(e.id, value="v2", expected_version=e.version)
        assert up.value == "v2" and up.version == e.version + 1
        with pytest.raises(VersionConflict) as vc:
            await mem.update(e.id, value="v3", expected_version=e.version)
        assert vc.value.entry_id == e.id and vc.value.actual == up.version
        assert vc.value.status == 409  # type: ignore[attr-defined]
        with pytest.raises(InvalidTag) as bad:
            await mem.store("x", tags={"bad tag\n"})
        assert bad.value.field == "tags"  # type: ignore[attr-defined]
        with pytest.raises(EntryTooLarge):
            await mem.store("x" * 1_100_000)  # over the gateway's 1 MB body limit
        with pytest.raises(InvalidArgument, match="level"):
            await mem.store("x", level="nope")
        with pytest.raises(NotFound):
            await mem.get("01J0000000000000000000000")
        assert [x.value for x in await mem.store_many(
            [{"data": "b1", "tags": ["b"]}, {"data": "b2", "level": "stm"}])] == ["b1", "b2"]
    async with RemoteMemory(gateway.url, "bbt_forged_e30") as bad_token:
        with pytest.raises(AccessDenied, match="malformed"):
            await bad_token.list_tags()


async def test_on_change_delivers_and_resumes(gateway: GatewayProc) -> None:
    async with RemoteMemory(gateway.url, gateway.token("a1", ["t1"])) as mem:
        seen: list[Event] = []
        h = mem.on_change("agent:a1:*", seen.append, tags={"watch"})
        await h.ready()
        e1 = await mem.store("one", tags={"watch"})
        await mem.store("ignored", tags={"other"})
        e2 = await mem.store("two", tags={"watch"}, level="stm")
        await _until(lambda: len(seen) >= 2)
        assert [(ev.entry_id, ev.type) for ev in seen] == [(e1.id, EventType.WRITTEN),
                                                           (e2.id, EventType.WRITTEN)]
        cursor = h.cursor
        await h.stop()
        e3 = await mem.store("three", tags={"watch"})  # written while nobody listens
        await mem.forget(e1.id)
        later: list[Event] = []
        h2 = mem.on_change("agent:a1:*", later.append, since=cursor)
        await _until(lambda: len(later) >= 2)
        assert [(ev.entry_id, ev.type) for ev in later] == [(e3.id, EventType.WRITTEN),
                                                            (e1.id, EventType.DELETED)]
        await h2.stop()
        refused = mem.on_change("agent:a2:*", seen.append)
        with pytest.raises(AccessDenied):
            await refused.ready()
        assert not refused.running


def test_sync_twin(gateway: GatewayProc) -> None:
    tok = gateway.token("a1", ["t1"])
    with RemoteMemory(gateway.url, tok).sync() as mem:
        e = mem.store("the build failed on step three", tags={"failure"})
        assert [h.entry.id for h in mem.recall("why did the build fail")] == [e.id]
        seen: list[Event] = []
        h = mem.on_change("agent:a1:working", seen.append)
        e2 = mem.store("again")
        _wait_sync(lambda: len(seen) >= 1)
        assert seen[0].entry_id == e2.id and h.delivered == 1
        h.stop()
        assert not h.running
        assert mem.forget(e.id) is True
        with pytest.raises(NotFound):
            mem.forget(e.id)
        with pytest.raises(AccessDenied):
            mem.list_tags(team="t9")
    with pytest.raises(RuntimeError, match="closed"):
        mem.store("late")


async def _until(cond: Callable[[], bool]) -> None:
    async with asyncio.timeout(20):
        while not cond():  # noqa: ASYNC110 - polls handler side effects, bounded wait
            await asyncio.sleep(0.05)


def _wait_sync(cond: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 20
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.process  # a fresh interpreter
def test_memory_imports_without_httpx() -> None:
    """``import memory`` never needs httpx; ``memory.remote`` says what to install."""
    code = ("import sys; sys.modules['httpx'] = None\n"
            "import memory\n"
            "from memory import AgentMemory, MemoryQuery\n"
            "try:\n"
            "    import memory.remote\n"
            "except ImportError as e:\n"
            "    print(e)\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "memory.remote needs httpx" in p.stdout and "[gateway]" in p.stdout
