"""Scope and edge registry round trips, the default hierarchy, the memory map."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest
import redis
from rich.console import Console

from blackboard import Blackboard, NotFound
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
from memory.access import provision_agent
from memory.errors import EdgeVersionConflict
from memory.memory_map import build_memory_map
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
        assert bb.records.Scope.make_primary_key("x") == K.scope_record("x")
        assert bb.records.Edge.make_primary_key("y") == K.edge_record("y")
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
        assert await reg.scope_ids() == ["agent:a1:stm", "team:t1"]
        assert await bb.records.has_query_engine() in (True, False)
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
        "team:t1:ltm:semantic", "team:t2:ltm:semantic",  # the teams' reconciled beliefs
        "collective",  # what agents agree on (issue 27)
    }
    transformers = sorted(e.transformer for e in h.edges)
    # identity twice: sensory -> working, and working -> stm (steps kept beside summaries)
    assert transformers == ["collective_beliefs", "collective_procedures",
                            "episodic", "identity", "identity", "procedural", "semantic",
                            "summarize", "team", "team", "team_beliefs", "team_beliefs",
                            "timeline", "timeline"]
    h2 = await install_default_hierarchy(bb, "a1", teams=["t1", "t2"])
    assert h2.edges == h.edges
    async with AgentMemory(bb, "a2", teams=["t1"]) as m2:
        await m2.install_default_hierarchy(
            overrides={MemoryLevel.WORKING: {"max_entries": 3}})
        reg = m2.registry
        edges = await reg.list_edges()
        # shared pattern edges (6, 2 into collective, 2 tables of contents) + a1->t1,
        # a1->t2, a2->t1 (stm summaries, and beliefs)
        assert len(edges) == 6 + 2 + 2 + 3 * 2
        assert (await reg.get_scope("agent:a2:working")).limits.max_entries == 3  # type: ignore[union-attr]
        assert (await reg.get_scope("agent:a1:working")).limits.max_entries == 200  # type: ignore[union-attr]
        stm_edges = [e for e in edges if e.match("agent:a2:stm")]
        assert {e.match("agent:a2:stm") for e in stm_edges} == {
            "agent:a2:ltm:episodic", "agent:a2:ltm:semantic", "agent:a2:ltm:procedural",
            "team:t1", "agent:a2:toc"}


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
    # registered by the hierarchy (the collective edges' target), read-only to the agent
    assert col is not None and not col.writable and col.count == 1
    assert col.config is not None and col.config.kind == "collective"
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
    # Configs the caller already read (an operator's listing) give the same map.
    async with AgentMemory(bb, "a1", teams=["t1"]) as mem:
        cands = mem.readable_scopes()
        configs = await mem.registry.get_scopes(list(cands))
        given = await build_memory_map(bb, mem.registry, mem.access, cands, configs=configs)
    assert given == m


# -- edges: owned, versioned, published at once ----------------------------------------------


def _versions(r: redis.Redis, partitions: int) -> list[int]:
    return [int(v or 0) for v in r.mget([PartitionKeys(p).edges_version
                                         for p in range(partitions)])]


async def test_install_never_resets_an_operators_trigger(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    reg = Registry(bb)
    try:
        h = await install_default_hierarchy(bb, "a1", teams=["t1"], registry=reg)
        summ = next(e for e in h.edges if e.transformer == "summarize")
        assert summ.version == 1
        operator = Trigger.from_json({"min_count": 5, "max_age": 1})
        changed = await reg.update_edge(replace(summ, trigger=operator), expected_version=1)
        assert changed.version == 2 and changed.trigger == operator
        assert changed.since == summ.since  # the edge matches from its first install on
        before = _versions(clean_redis, bb.partitions)
        # Another agent's hierarchy, acl grant's provisioning, and a1's own re-install.
        await install_default_hierarchy(bb, "a2", teams=["t1"], registry=reg)
        await provision_agent(bb, "a3", ["t2"])
        h1 = await install_default_hierarchy(bb, "a1", teams=["t1"], registry=reg)
        got = await reg.get_edge(summ.id)
        assert got is not None and got.trigger == operator and got.version == 2
        assert next(e for e in h1.edges if e.id == summ.id).trigger == operator
        # The shared pattern edges were installed once: only the new team edges (a2 -> t1,
        # a3 -> t2; each pair's summaries and beliefs edges) were created, each bumping
        # every partition once; a1's re-install changed nothing and bumped nothing.
        after = _versions(clean_redis, bb.partitions)
        assert [a - b for a, b in zip(after, before, strict=True)] == [4] * bb.partitions
        assert len(await reg.list_edges()) == 6 + 2 + 2 + 3 * 2  # 2: collective, 2: tocs
        assert {e.version for e in await reg.list_edges() if e.id != summ.id} == {1}
    finally:
        await reg.aclose()


async def test_update_edge_is_compare_and_set(bb: Blackboard, clean_redis: redis.Redis) -> None:
    reg = Registry(bb)
    try:
        e = await reg.install_edge(
            MemorySubscription("agent:*:working", "agent:{1}:stm", "identity"))
        t0 = await bb.client.time()
        assert e.version == 1 and 0 < e.since <= t0[0] * 1000 + t0[1] // 1000
        # It matches events from its install on, not those written before it existed.
        assert e.accepts("agent:a:working", (), e.since) == "agent:a:stm"
        assert e.accepts("agent:a:working", (), e.since - 1) is None
        assert _versions(clean_redis, bb.partitions) == [1] * bb.partitions
        with pytest.raises(EdgeVersionConflict, match="at version 1, not the expected 7"):
            await reg.update_edge(replace(e, trigger=Trigger.count(9)), expected_version=7)
        with pytest.raises(NotFound, match="no dataflow edge"):
            await reg.update_edge(replace(e, id="nope"), expected_version=1)
        # Refused updates change nothing and bump nothing.
        assert (await reg.get_edge(e.id)).trigger == Trigger.count(1)  # type: ignore[union-attr]
        assert _versions(clean_redis, bb.partitions) == [1] * bb.partitions
        # Two writers that read version 1: exactly one wins, the other gets the conflict.
        results = await asyncio.gather(
            *(reg.update_edge(replace(e, trigger=Trigger.count(n)), expected_version=1)
              for n in (2, 3)), return_exceptions=True)
        won = [r for r in results if isinstance(r, MemorySubscription)]
        lost = [r for r in results if isinstance(r, EdgeVersionConflict)]
        assert len(won) == 1 and len(lost) == 1 and won[0].version == 2
        assert await reg.get_edge(e.id) == won[0]
        assert _versions(clean_redis, bb.partitions) == [2] * bb.partitions
        # save_edge is an explicit set: it replaces (a new version), and a no-op when equal.
        s = await reg.save_edge(replace(e, trigger=Trigger.count(4)))
        assert s.version == 3 and s.trigger == Trigger.count(4) and s.since == e.since
        assert (await reg.save_edge(s)).version == 3
    finally:
        await reg.aclose()


async def test_concurrent_installs_create_one_edge(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    regs = [Registry(bb) for _ in range(8)]
    try:
        e = MemorySubscription("agent:*:working", "agent:{1}:stm", "summarize",
                               trigger=Trigger.count(4))
        got = await asyncio.gather(*(r.install_edge(e) for r in regs))
        assert {(g.version, g.since) for g in got} == {(1, got[0].since)}
        assert clean_redis.hget(K.edge_record(e.id), "published") == b"1"
        assert clean_redis.smembers(K.EDGE_RECORDS) == {e.id.encode()}
        # Created once; every installer returned only after a bump in every partition.
        assert min(_versions(clean_redis, bb.partitions)) >= 1
    finally:
        for r in regs:
            await r.aclose()


async def test_an_unpublished_edge_is_published_by_the_next_installer(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    """A creator that died between writing the record and bumping the versions: the next
    install of the edge bumps before returning, so its caller's writes are matched."""
    reg = Registry(bb)
    try:
        e = await reg.install_edge(
            MemorySubscription("agent:*:working", "agent:{1}:stm", "identity"))
        clean_redis.hset(K.edge_record(e.id), "published", 0)
        await reg.install_edge(e)
        assert _versions(clean_redis, bb.partitions) == [2] * bb.partitions
        assert clean_redis.hget(K.edge_record(e.id), "published") == b"1"
        await reg.install_edge(e)
        assert _versions(clean_redis, bb.partitions) == [2] * bb.partitions
    finally:
        await reg.aclose()


async def test_remove_edge_drops_its_buffers_everywhere(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    reg = Registry(bb)
    try:
        e = await reg.install_edge(
            MemorySubscription("agent:*:working", "agent:{1}:stm", "identity"))
        keep = await reg.install_edge(
            MemorySubscription("agent:*:working", "agent:{1}:stm", "summarize"))
        parts = {partition_of(f"agent:a{i}:working", bb.partitions) for i in range(6)}
        for i in range(6):
            part = PartitionKeys(partition_of(f"agent:a{i}:working", bb.partitions))
            for edge in (e, keep):
                key = part.pending(edge.id, f"agent:a{i}:stm")
                clean_redis.rpush(key, f"1|agent:a{i}:working|x{i}")
                clean_redis.sadd(part.pendings, key)
                clean_redis.hset(part.inflight, key, "1")
        assert await reg.remove_edge(e.id) is True
        assert await reg.get_edge(e.id) is None
        assert _versions(clean_redis, bb.partitions) == [3] * bb.partitions
        for p in parts:
            part = PartitionKeys(p)
            members = {m.decode() for m in clean_redis.smembers(part.pendings)}
            assert members and all(f":pending:{keep.id}:" in m for m in members)
            assert all(f":pending:{keep.id}:" in f.decode()
                       for f in clean_redis.hkeys(part.inflight))
        assert not list(clean_redis.scan_iter(match=f"bb:*:pending:{e.id}:*"))
        assert len(list(clean_redis.scan_iter(match=f"bb:*:pending:{keep.id}:*"))) == 6
        assert await reg.remove_edge(e.id) is False  # gone already: nothing else changes
    finally:
        await reg.aclose()


async def test_edges_on_the_cluster(cbb: Blackboard) -> None:
    """Compare-and-set and the version bumps work across the masters (records, counters and
    buffers live in different slots)."""
    reg = Registry(cbb)

    async def versions() -> list[int]:
        return [int(await cbb.client.get(PartitionKeys(p).edges_version) or 0)
                for p in range(cbb.partitions)]
    try:
        h = await install_default_hierarchy(cbb, "a1", registry=reg)
        await install_default_hierarchy(cbb, "a2", registry=reg)
        assert await versions() == [6 + 2 + 2] * cbb.partitions  # collective, tocs
        e = next(x for x in h.edges if x.transformer == "identity" and "working" in x.source)
        got = await asyncio.gather(
            *(reg.update_edge(replace(e, trigger=Trigger.count(n)), expected_version=1)
              for n in (2, 3)), return_exceptions=True)
        assert sorted(type(g).__name__ for g in got) == ["EdgeVersionConflict",
                                                         "MemorySubscription"]
        part = PartitionKeys(partition_of("agent:a1:working", cbb.partitions))
        key = part.pending(e.id, "agent:a1:stm")
        await cbb.client.rpush(key, "1|agent:a1:working|x")
        await cbb.client.sadd(part.pendings, key)
        assert await reg.remove_edge(e.id) is True
        assert not await cbb.client.exists(key) and not await cbb.client.smembers(part.pendings)
        assert await versions() == [6 + 2 + 2 + 2] * cbb.partitions  # the update, the removal
    finally:
        await reg.aclose()
