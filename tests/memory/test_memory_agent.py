"""AgentMemory on a real Redis: store, recall, forget, reinforce, tags, stats, transfer."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from blackboard import AccessDenied, Blackboard, NotFound
from blackboard.ids import deterministic_id
from memory import (
    AgentMemory,
    MemoryLevel,
    MemoryQuery,
    SemanticRecallUnavailable,
    TagFilter,
    aliases,
)


@pytest.fixture()
async def mem(bb: Blackboard) -> AsyncIterator[AgentMemory]:
    async with AgentMemory(bb, "a1", teams=["t1"]) as m:
        yield m


async def test_store_writes_level_scope_and_registers_it(mem: AgentMemory, bb: Blackboard) -> None:
    e = await mem.store({"x": 1}, level=MemoryLevel.WORKING, tags={"action"}, key="k1",
                        metadata={"m": 1}, importance=0.7)
    assert e.scope == "agent:a1:working" and e.tags == {"action"} and e.importance == 0.7
    cfg = await mem.registry.get_scope("agent:a1:working")
    assert cfg is not None and cfg.limits.max_entries == 200
    assert (await bb.scope("agent:a1:working").policy()).max_entries == 200
    s = await mem.store("fact", level=MemoryLevel.SEMANTIC)
    assert s.scope == "agent:a1:ltm:semantic"
    t = await mem.store("shared", level=None, team="t1")
    assert t.scope == "team:t1"
    sens = await mem.store("raw", level=MemoryLevel.SENSORY)
    assert 0 < sens.expires_at - sens.created_at <= 300_000  # the level's default TTL
    own_ttl = await mem.store("raw", level=MemoryLevel.SENSORY, ttl=10)
    assert own_ttl.expires_at - own_ttl.created_at == 10_000
    with pytest.raises(AccessDenied, match="team:t2"):
        await mem.store("x", level=None, team="t2")


async def test_recall_newest_tags_time_key_levels(mem: AgentMemory) -> None:
    async def later() -> None:  # distinct created_at (server ms) for the time-range check
        await asyncio.sleep(0.003)

    a = await mem.store("a", tags={"x", "y"}, key="user.name")
    await later()
    b = await mem.store("b", tags={"x"}, level=MemoryLevel.STM, key="user.age")
    await later()
    c = await mem.store("c", tags={"z"}, level=MemoryLevel.SEMANTIC, key="other")
    await later()
    d = await mem.store("d", tags={"x"}, level=None, team="t1")
    got = await mem.recall(MemoryQuery(order="newest", tag_filter=TagFilter(all_of={"x"})))
    assert [h.entry.id for h in got] == [d.id, b.id, a.id]  # merged across scopes, newest first
    got = await mem.recall(MemoryQuery(order="newest", tag_filter=TagFilter(any_of={"y", "z"})))
    assert [h.entry.id for h in got] == [c.id, a.id]
    got = await mem.recall(MemoryQuery(order="newest", max_results=1,
                                       tag_filter=TagFilter(all_of={"x"}, none_of={"y"})))
    assert [h.entry.id for h in got] == [d.id]
    got = await mem.recall(MemoryQuery(order="newest", key_pattern="user.*"))
    assert [h.entry.id for h in got] == [b.id, a.id]
    got = await mem.recall(MemoryQuery(order="newest", levels=[MemoryLevel.SEMANTIC.value]))
    assert [h.entry.id for h in got] == [c.id]
    got = await mem.recall(MemoryQuery(order="newest", time_range=(b.created_at, c.created_at)))
    assert {h.entry.id for h in got} == {b.id, c.id}
    got = await mem.recall(MemoryQuery(order="newest", time_range=(c.created_at, None)))
    assert {h.entry.id for h in got} == {c.id, d.id}  # an open end
    got = await mem.recall(MemoryQuery(order="newest", scopes=["team:t1"]))
    assert [h.entry.id for h in got] == [d.id]
    assert len(await mem.recall(MemoryQuery(order="newest"), max_results=2)) == 2


async def test_recall_newest_scores_are_honest(mem: AgentMemory,
                                               caplog: pytest.LogCaptureFixture) -> None:
    old = await mem.store("old", tags={"n"}, importance=0.9)
    await asyncio.sleep(0.003)
    new = await mem.store("new", tags={"n"}, importance=0.2)
    with caplog.at_level(logging.INFO, logger="retrieval.structured"):
        got = await mem.recall(MemoryQuery(order="newest", tag_filter=TagFilter(all_of={"n"})),
                               explain=True)
    assert [h.entry.id for h in got] == [new.id, old.id]
    for h in got:  # nothing was ranked by text; the rest is the entry's own
        assert h.dense is None and h.bm25 is None and h.fused == 0.0
        assert h.scope == "agent:a1:working" and 0 < h.recency <= 1 and h.score == h.recency
    assert got[0].importance == 0.2 and got[1].importance == 0.9
    assert all(0 < h.strength <= 1 for h in got)
    lines = [r.getMessage() for r in caplog.records if r.name == "retrieval.structured"]
    assert len(lines) == 2 and "'new'" in lines[0]
    assert mem.retriever is None  # listing made no hybrid retriever (no embedder loaded)


async def test_recall_free_text_needs_retriever(bb: Blackboard) -> None:
    # The default retriever (retrieval layer) is on unless turned off: off, text raises.
    async with AgentMemory(bb, "a1", teams=["t1"], default_retriever=False) as mem:
        with pytest.raises(SemanticRecallUnavailable, match="retriever"):
            await mem.recall("what did I do?")
        with pytest.raises(NotImplementedError):
            await mem.recall("text")
        with pytest.raises(SemanticRecallUnavailable):  # no text, ranked: still a retriever's
            await mem.recall(MemoryQuery(tag_filter=TagFilter(all_of={"x"})))
        assert await mem.recall(MemoryQuery(order="newest")) == []  # listing needs none
    seen: list[tuple[MemoryQuery, Sequence[str]]] = []

    class Custom:  # any object with recall(query, scopes) and aclose() is a Retriever
        async def recall(self, q: MemoryQuery, scopes: Sequence[str]) -> list[Any]:
            seen.append((q, scopes))
            return ["hit1", "hit2"]

        async def aclose(self) -> None:
            pass

    async with AgentMemory(bb, "a1", teams=["t1"], retriever=Custom()) as m2:
        assert await m2.recall("text", max_results=1) == ["hit1"]
        assert await m2.recall(MemoryQuery(query="x", levels=["stm"])) == ["hit1", "hit2"]
        aliases._noted.clear()  # the note is said once per process: make this the first
        with pytest.warns(DeprecationWarning, match="'limit' is deprecated"):
            assert await m2.recall("text", limit=1) == ["hit1"]  # the old name still works
    query, scopes = seen[0]
    assert query.query == "text" and query.max_results == 1
    assert "agent:a1:working" in scopes and "team:t1" in scopes
    assert "collective" in scopes and not any(s.startswith("agent:a2") for s in scopes)
    assert list(seen[1][1]) == ["agent:a1:stm", "team:t1:stm"]  # levels resolved by memory


async def test_access_denied_on_other_agents_scopes(mem: AgentMemory, bb: Blackboard) -> None:
    async with AgentMemory(bb, "a2", teams=["t1"]) as other:
        private = await other.store("secret")
        shared = await other.store("team note", level=None, team="t1")
    with pytest.raises(AccessDenied, match="agent:a2:working"):
        await mem.recall(MemoryQuery(order="newest", scopes=["agent:a2:working"]))
    with pytest.raises(AccessDenied, match="agent:a2:working"):
        await mem.forget(private.id, scope="agent:a2:working")
    with pytest.raises(AccessDenied):
        await mem.reinforce(private.id, scope="agent:a2:working")
    with pytest.raises(NotFound):
        await mem.forget(private.id)  # only the agent's own scopes are searched
    with pytest.raises(AccessDenied, match="agent:a2"):
        mem.on_change("agent:a2:*", lambda ev: None)
    # Team scopes: read and write; collective: read only.
    got = await mem.recall(MemoryQuery(order="newest", scopes=["team:t1"]))
    assert [h.entry.id for h in got] == [shared.id]
    assert await mem.forget(shared.id) is True
    await bb.scope("collective").write("wisdom", tags={"c"})
    got = await mem.recall(MemoryQuery(order="newest", scopes=["collective"]))
    assert [h.entry.value for h in got] == ["wisdom"]
    with pytest.raises(AccessDenied, match="collective"):
        await mem.forget("X", scope="collective")
    with pytest.raises(AccessDenied):
        await mem.list_tags(MemoryLevel.WORKING, team="t9")


async def test_forget_and_reinforce(mem: AgentMemory, bb: Blackboard) -> None:
    e = await mem.store("x", level=MemoryLevel.STM)
    s, n = await mem.reinforce(e.id)
    assert n == 1 and s == pytest.approx(1.0)  # capped at max strength
    async with AgentMemory(bb, "a2", teams=["t1"]) as other:
        t = await mem.store("shared", level=None, team="t1", importance=0.3)
        await mem.reinforce(t.id)
        s2, n2 = await other.reinforce(t.id, boost=0.1)
    assert n2 == 2 and s2 <= 1.0
    stored = await bb.scope("team:t1").get(t.id)
    assert stored.reinforced_by == ("a1", "a2") and stored.reinforcements == 2
    assert await mem.forget(e.id) is True
    with pytest.raises(NotFound):
        await mem.forget(e.id)
    with pytest.raises(NotFound):
        await mem.reinforce(e.id)


async def test_list_tags(mem: AgentMemory) -> None:
    await mem.store("a", tags={"x", "y"})
    await mem.store("b", tags={"x"})
    await mem.store("c", tags={"x"}, level=MemoryLevel.STM)
    await mem.store("d", tags={"q"}, level=None, team="t1")
    assert await mem.list_tags(MemoryLevel.WORKING) == {"x": 2, "y": 1}
    assert await mem.list_tags(MemoryLevel.STM) == {"x": 1}
    assert await mem.list_tags() == {"x": 3, "y": 1}
    assert await mem.list_tags(None, team="t1") == {"q": 1}


async def test_transfer_is_idempotent_with_provenance(mem: AgentMemory, bb: Blackboard) -> None:
    e = await mem.store({"v": 1}, level=MemoryLevel.STM, tags={"a"}, key="k", metadata={"m": 2})
    moved = await mem.transfer(e.id, MemoryLevel.SEMANTIC)
    assert moved.scope == "agent:a1:ltm:semantic"
    assert moved.id == deterministic_id("transfer", "agent:a1:stm", moved.scope, e.id)
    assert moved.value == {"v": 1} and moved.tags == {"a"} and e.id in moved.source
    assert moved.metadata["transferred_from"] == "agent:a1:stm"
    assert moved.metadata["original_key"] == "k" and moved.metadata["m"] == 2
    with pytest.raises(NotFound):
        await bb.scope("agent:a1:stm").get(e.id)
    again = await mem.transfer(e.id, MemoryLevel.SEMANTIC)
    assert again.id == moved.id
    assert await bb.scope(moved.scope).count() == 1
    # A crash between copy and delete: the retry finishes the move, one copy only.
    f = await mem.store("y", level=MemoryLevel.STM)
    copy_id = deterministic_id("transfer", "agent:a1:stm", "agent:a1:ltm:episodic", f.id)
    await bb.scope("agent:a1:ltm:episodic").write("y", entry_id=copy_id, source=[f.id])
    done = await mem.transfer(f.id, MemoryLevel.EPISODIC)
    assert done.id == copy_id and await bb.scope("agent:a1:stm").count() == 0
    with pytest.raises(AccessDenied):
        await mem.transfer(f.id, MemoryLevel.WORKING, team="t2")


async def test_stats(mem: AgentMemory, bb: Blackboard) -> None:
    t0 = int(time.time() * 1000)
    first = await mem.store("a", tags={"x"})
    await mem.store("b", tags={"x", "y"}, importance=0.9)
    last = await mem.store("c", tags={"y"})
    await bb.scope("agent:a1:working").write("weak", tags={"w"}, strength=0.3)
    # Decaying scope (stm): strengths map back from evict times.
    for s in (1.0, 0.5, 0.25):
        await bb.scope("agent:a1:stm").write("s", strength=s)
    await mem._ensure("agent:a1:stm")  # registered after the writes: scores use old policy
    st = await mem.stats()
    w = st["agent:a1:working"]
    assert w.count == 4 and w.tags == {"w": 1, "x": 2, "y": 2}
    assert w.oldest_ms == first.created_at and w.newest_ms >= last.created_at >= t0
    assert w.strength.exact and w.strength.counts == (0, 1, 0, 0, 3)
    assert st["agent:a1:ltm:semantic"].count == 0
    assert st["agent:a1:ltm:semantic"].oldest_ms is None
    assert "collective" in st and "team:t1" in st
    stm = bb.scope("agent:a1:stm")
    await stm.set_policy((await stm.policy()).__class__(decay_rate=0.5, decay_tick=3600.0,
                                                        evict_threshold=0.1))
    for s in (1.0, 0.5, 0.25, 0.05):
        await stm.write("d", strength=s)
    hist = (await mem.stats())["agent:a1:stm"].strength
    assert not hist.exact
    # The three writes before the decaying policy carry strength scores, not times: due.
    assert hist.counts == (0, 1, 1, 0, 1) and hist.below_threshold == 1 + 3
    assert (await mem.stats())["agent:a1:stm"].to_json()["count"] == 7


async def test_observe_rejects_unwritable_scope(mem: AgentMemory) -> None:
    with pytest.raises(AccessDenied):
        mem.observe(level=MemoryLevel.WORKING, team="t9")


async def test_many_agents_concurrently(bb: Blackboard) -> None:
    async def one(i: int) -> int:
        async with AgentMemory(bb, f"g{i}", teams=["t"]) as m:
            await m.store(i, level=None, team="t")
            await m.store(i)
            return len(await m.recall(MemoryQuery(order="newest")))
    got = await asyncio.gather(*(one(i) for i in range(5)))
    assert all(n >= 2 for n in got)
    assert await bb.scope("team:t").count() == 5
