"""Scope and edge registry round trips, the default hierarchy, the memory map."""

from __future__ import annotations

import json

import pytest
import redis
from rich.console import Console

from blackboard import Blackboard
from blackboard import keys as K
from blackboard.keys import PartitionKeys, partition_of
from memory import (
    AgentMemory,
    EdgeCycle,
    InvalidEdge,
    MemoryLevel,
    MemorySubscription,
    Registry,
    TagMatch,
    Trigger,
    default_config,
    install_default_hierarchy,
)
from memory.render import render_map


async def test_scope_config_round_trip(bb: Blackboard, clean_redis: redis.Redis) -> None:
    reg = Registry(bb)
    try:
        cfg = default_config("agent:a1:stm", max_entries=7, ttl=60.0, decay_rate=0.3)
        saved = await reg.register_scope(cfg)
        got = await reg.get_scope("agent:a1:stm")
        assert got == saved and got.limits == cfg.limits and got.level is MemoryLevel.STM
        assert got.created_at > 0
        # Records live at the keys blackboard/keys.py names, with their pk in the plain set.
        assert clean_redis.exists(K.scope_record("agent:a1:stm"))
        assert clean_redis.smembers(K.SCOPE_RECORDS) == {b"agent:a1:stm"}
        assert reg.Scope.make_primary_key("x") == K.scope_record("x")
        assert reg.Edge.make_primary_key("y") == K.edge_record("y")
        # The policy reached the write script's cfg hash.
        pol = await bb.scope("agent:a1:stm").policy()
        assert (pol.max_entries, pol.ttl, pol.decay_rate) == (7, 60.0, 0.3)
        # ensure_scope keeps a registered config; replace changes it, created_at kept.
        assert (await reg.ensure_scope("agent:a1:stm")).limits.max_entries == 7
        again = await reg.register_scope(default_config("agent:a1:stm"))
        assert again.limits.max_entries == 10_000 and again.created_at == got.created_at
        assert await reg.get_scope("agent:a1:nope") is None
        await reg.ensure_scope("team:t1")
        assert [c.scope_id for c in await reg.list_scopes()] == ["agent:a1:stm", "team:t1"]
        assert [c.scope_id for c in await reg.list_scopes(owner="t1")] == ["team:t1"]
        assert await reg.has_query_engine() in (True, False)
    finally:
        await reg.aclose()


async def test_edge_round_trip_and_validation(bb: Blackboard, redis_url: str) -> None:
    reg = Registry(bb)
    try:
        e = MemorySubscription(
            "agent:*:working", "agent:{1}:stm", "summarize", params={"budget": 5, "x": [1]},
            filter=TagMatch.of(all_of={"a"}, any_of={"b", "c"}, none_of={"d"}),
            trigger=Trigger.any_of(Trigger.count(3), Trigger.age(9.5), Trigger.timer(60)),
        )
        await reg.save_edge(e)
        await reg.save_edge(e)  # idempotent
        assert await reg.get_edge(e.id) == e
        assert await reg.list_edges() == [e]
        # Another process (another connection) finds the same edges.
        async with Blackboard.connect(redis_url) as bb2:
            reg2 = Registry(bb2)
            assert await reg2.list_edges() == [e]
            await reg2.aclose()
        with pytest.raises(EdgeCycle):
            await reg.save_edge(MemorySubscription("agent:*:stm", "agent:{1}:working", "identity"))
        with pytest.raises(InvalidEdge):
            await reg.save_edge(MemorySubscription("agent:*:stm", "agent:{3}:x", "identity"))
        assert await reg.list_edges() == [e]
        assert await reg.delete_edge(e.id) is True
        assert await reg.list_edges() == [] and await reg.get_edge(e.id) is None
    finally:
        await reg.aclose()


async def test_install_default_hierarchy_idempotent(bb: Blackboard) -> None:
    h = await install_default_hierarchy(bb, "a1", teams=["t1", "t2"])
    assert {c.scope_id for c in h.scopes} == {
        "agent:a1:sensory", "agent:a1:working", "agent:a1:stm", "agent:a1:ltm:episodic",
        "agent:a1:ltm:semantic", "agent:a1:ltm:procedural", "team:t1", "team:t2",
    }
    transformers = sorted(e.transformer for e in h.edges)
    # identity twice: sensory -> working, and working -> stm (steps kept beside summaries)
    assert transformers == ["episodic", "identity", "identity", "procedural", "semantic",
                            "summarize", "team", "team"]
    h2 = await install_default_hierarchy(bb, "a1", teams=["t1", "t2"])
    assert h2.edges == h.edges
    async with AgentMemory(bb, "a2", teams=["t1"]) as m2:
        await m2.install_default_hierarchy(
            overrides={MemoryLevel.WORKING: {"max_entries": 3}})
        reg = m2.registry
        edges = await reg.list_edges()
        assert len(edges) == 6 + 3  # shared pattern edges + a1->t1, a1->t2, a2->t1
        assert (await reg.get_scope("agent:a2:working")).limits.max_entries == 3  # type: ignore[union-attr]
        assert (await reg.get_scope("agent:a1:working")).limits.max_entries == 200  # type: ignore[union-attr]
        stm_edges = [e for e in edges if e.match("agent:a2:stm")]
        assert {e.match("agent:a2:stm") for e in stm_edges} == {
            "agent:a2:ltm:episodic", "agent:a2:ltm:semantic", "agent:a2:ltm:procedural",
            "team:t1"}


async def test_memory_map_and_render(bb: Blackboard) -> None:
    async with AgentMemory(bb, "a1", teams=["t1"]) as mem:
        await mem.install_default_hierarchy()
        await mem.store("x", level=MemoryLevel.WORKING)
        await mem.store("y", level=MemoryLevel.WORKING)
        await bb.scope("collective").write("c")
        await bb.scope("agent:a2:working").write("not mine")
        edge = next(e for e in await mem.registry.list_edges() if e.transformer == "summarize")
        pend = PartitionKeys(partition_of("agent:a1:working", bb.partitions)).pending(
            edge.id, "agent:a1:stm")
        await bb.client.rpush(pend, "e1", "e2", "e3")
        m = await mem.memory_map()
    ids = [s.scope for s in m.scopes]
    assert "agent:a1:working" in ids and "team:t1" in ids and "collective" in ids
    assert not any(s.startswith("agent:a2") for s in ids)
    w = m.scope("agent:a1:working")
    assert w is not None and w.count == 2 and w.writable and w.config is not None
    assert w.config.limits.max_entries == 200
    col = m.scope("collective")
    assert col is not None and not col.writable and col.config is None and col.count == 1
    ev = {(e.source, e.target): e for e in m.edges}
    assert ev[("agent:a1:working", "agent:a1:stm")].pending == 3
    assert ev[("agent:a1:stm", "team:t1")].transformer == "team"
    assert ev[("agent:a1:stm", "agent:a1:ltm:semantic")].pending == 0
    data = json.loads(m.to_json())
    assert data["agent"] == "a1" and data["teams"] == ["t1"]
    console = Console(record=True, width=200)
    console.print(render_map(m))
    text = console.export_text()
    assert "agent:a1:working" in text and "summarize" in text and "3 pending" in text
