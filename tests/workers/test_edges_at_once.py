"""Edges take effect at once, through a real worker process that is already running.

The worker's periodic edge refresh (the backstop) is set to an hour in these tests, so only
the edges version protocol can make them pass: a write that follows
``install_default_hierarchy()`` returning, with no sleep, reaches every edge that matches it,
exactly once, for every edge kind (sensory -> working, working -> stm by identity and
summarize, stm -> each long-term level, stm -> team)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest
import redis
from edges_support import NO_BACKSTOP, SyncRedis, pending_ids, scope_entries, until, wait_ready
from workers_support import WorkerProcs

from blackboard import Blackboard, Entry
from blackboard import keys as K
from consolidation.transformer import transformer_roles
from memory.hierarchy import install_default_hierarchy
from memory.naming import agent_scopes
from memory.registry import Registry
from memory.subscriptions import MemorySubscription

pytestmark = pytest.mark.slow

CONSOLIDATING = ("summarize", "episodic", "semantic", "procedural", "team")


def sources_via(entries: list[Entry], edge: MemorySubscription) -> list[str]:
    out: list[str] = []
    for e in entries:
        prov = e.metadata.get("provenance")
        if isinstance(prov, dict) and prov.get("edge") == edge.id:
            out += list(prov["sources"])
    return out


#: Transformers every batch of which leaves outputs naming its sources: an entry they took
#: in is found among the outputs' sources. (The long-term ones may rightly derive nothing
#: from a batch; they are checked by the workers' buffered counters.)
TRACEABLE = {"identity", "summarize", "team"}


async def reach_report(bb: Blackboard, r: SyncRedis, agents: list[str],
                       edges: list[MemorySubscription]) -> str:
    """'' when every entry of the agents' scopes reached every edge that matches it exactly
    once; else what is missing or doubled. Two views: for traceable edges, each entry is
    among the edge's outputs' sources or in its buffer, and in neither twice; for every
    role, the items its workers buffered number exactly the (entry, edge) matches."""
    problems: list[str] = []
    matches: Counter[str] = Counter()
    for a in agents:
        for edge in edges:
            for src in agent_scopes(a):
                target = edge.match(src)
                if target is None:
                    continue
                want = {e.id for e in await scope_entries(bb, src)
                        if edge.accepts(src, e.tags)}
                matches[edge.transformer] += len(want)
                if edge.transformer not in TRACEABLE:
                    continue
                outs = Counter(sources_via(await scope_entries(bb, target), edge))
                buffered = pending_ids(r, bb.partitions, edge, src, target)
                # An item stays in the buffer until its batch is trimmed, just after the
                # batch's outputs are written, so an id may be in both for a moment; an id
                # twice among the outputs, or twice in the buffer, is a duplicate.
                twice = [i for i, n in (outs + Counter(buffered) - Counter(set(buffered))).items()
                         if n > 1]
                missing = want - set(outs) - set(buffered)
                if missing or twice:
                    problems.append(f"{edge.transformer} {src}->{target}: "
                                    f"{len(missing)} missing, {len(twice)} twice")
    for role, transformers in transformer_roles().items():
        want_n = sum(matches[t] for t in transformers)
        counter = TAKEN_COUNTER.get(role, "buffered")
        got_n = role_counter(r, role, counter)
        if got_n != want_n:
            problems.append(f"role {role} {counter} {got_n} items of {want_n} matches")
    return "; ".join(problems)


#: The counter of the items a role took, per role: an edge runner buffers each match; the
#: timeline role places entries straight from the bus, each once (it buffers nothing).
TAKEN_COUNTER = {"timeline": "placed"}


def role_counter(r: SyncRedis, role: str, name: str) -> int:
    """A counter summed over the live workers of ``role`` (from their heartbeat records)."""
    total = 0
    for wid in r.zrange(K.workers_of(role), 0, -1):
        raw = r.hget(K.worker(wid.decode()), "counters")
        total += int(json.loads(raw or b"{}").get(name, 0))
    return total


async def _write(bb: Blackboard, agent: str, n_working: int) -> list[Entry]:
    out = [await bb.scope(f"agent:{agent}:sensory").write(f"{agent} saw a light",
                                                           tags={"seen"})]
    for i in range(n_working):
        out.append(await bb.scope(f"agent:{agent}:working").write(
            f"{agent} step {i}: checked queue depth {i * 7 % 31}", tags={"step"}))
    return out


async def test_writes_right_after_install_reach_every_edge(
    bb: Blackboard, clean_redis: redis.Redis, worker_procs: WorkerProcs
) -> None:
    """Fresh agents install their hierarchy while a worker runs, and write at once."""
    w = worker_procs.start("all", **NO_BACKSTOP)
    await wait_ready(bb, clean_redis, CONSOLIDATING)
    agents = [f"n{i}" for i in range(6)]
    edges: dict[str, MemorySubscription] = {}
    for a in agents:
        h = await install_default_hierarchy(bb, a, teams=["t1"])
        edges.update({e.id: e for e in h.edges})
        await _write(bb, a, 20)  # no sleep: the first write follows the install at once

    async def done() -> str | bool:
        return await reach_report(bb, clean_redis, agents, list(edges.values())) or True

    await until(done, 60, "every write in every matching edge's outputs or buffer", w)

    # Consolidated, not only buffered: working -> stm fires on its count of 20. Reaching a
    # buffer comes first, so on a loaded machine the firing may still be on its way (CI:
    # one agent's stm empty right after every write was buffered).
    async def consolidated() -> bool:
        for a in agents:
            stm = await scope_entries(bb, f"agent:{a}:stm")
            kinds = Counter(e.metadata["provenance"]["transformer"] for e in stm)
            if kinds["identity"] < 20 or kinds["summarize"] < 1:
                return False
        return True

    await until(consolidated, 60, "every agent's stm holding its 20 copies and a summary", w)
    await asyncio.sleep(1.0)  # nothing doubles later either
    assert await reach_report(bb, clean_redis, agents, list(edges.values())) == ""
    assert w.poll() is None


async def test_fifty_fresh_agents_race_a_running_worker(
    bb: Blackboard, clean_redis: redis.Redis, worker_procs: WorkerProcs
) -> None:
    """The issue's race: 50 agents each install the default hierarchy and write at once,
    concurrently, with a worker already running: 0 lost, 0 twice."""
    w = worker_procs.start("all", **NO_BACKSTOP)
    await wait_ready(bb, clean_redis, CONSOLIDATING)
    agents = [f"r{i}" for i in range(50)]
    edges: dict[str, MemorySubscription] = {}

    async def agent(a: str) -> None:
        h = await install_default_hierarchy(bb, a, teams=[f"t{a[-1]}"])
        edges.update({e.id: e for e in h.edges})
        await _write(bb, a, 3)

    await asyncio.gather(*(agent(a) for a in agents))

    async def done() -> str | bool:
        return await reach_report(bb, clean_redis, agents, list(edges.values())) or True

    await until(done, 90, "every write of 50 racing agents reaching its edges", w)
    assert w.poll() is None


async def test_a_changed_trigger_applies_at_the_next_fire(
    bb: Blackboard, clean_redis: redis.Redis, worker_procs: WorkerProcs
) -> None:
    from dataclasses import replace

    from memory.subscriptions import Trigger

    reg = Registry(bb)
    try:
        e = await reg.install_edge(MemorySubscription(
            "agent:*:working", "agent:{1}:stm", "identity", trigger=Trigger.count(1000)))
        worker_procs.start("summarize", **NO_BACKSTOP)
        await wait_ready(bb, clean_redis, ("summarize",))
        for i in range(5):
            await bb.scope("agent:a1:working").write(f"step {i}")

        async def buffered() -> bool:
            return len(pending_ids(clean_redis, bb.partitions, e, "agent:a1:working",
                                   "agent:a1:stm")) == 5

        await until(buffered, 30, "5 items buffered under a count-1000 trigger")
        await asyncio.sleep(0.5)
        assert await scope_entries(bb, "agent:a1:stm") == []  # not due under the old trigger
        await reg.update_edge(replace(e, trigger=Trigger.count(5)), expected_version=1)
        # A count trigger is looked at when an item arrives: the next one fires the six
        # under the new trigger (the old one would wait for 1000).
        await bb.scope("agent:a1:working").write("step 5")

        async def fired() -> bool:
            return len(await scope_entries(bb, "agent:a1:stm")) == 6

        await until(fired, 15, "the 6 items fired under the new count-5 trigger")
    finally:
        await reg.aclose()


async def test_edges_changing_while_writes_flow(
    bb: Blackboard, clean_redis: redis.Redis, worker_procs: WorkerProcs
) -> None:
    """Edge changes racing a stream of writes: every batch the worker matched under an edge
    set that changed meanwhile is refused and matched again, and still every write reaches
    each edge exactly once."""
    from dataclasses import replace

    from memory.subscriptions import Trigger

    w = worker_procs.start("all", **NO_BACKSTOP)
    await wait_ready(bb, clean_redis, CONSOLIDATING)
    h = await install_default_hierarchy(bb, "c1")
    reg = Registry(bb)
    try:
        async def writes() -> None:
            await _write(bb, "c1", 60)

        async def churn() -> None:
            summ = next(e for e in h.edges if e.transformer == "summarize")
            idle = MemorySubscription("team:nobody", "team:nobody2", "team")
            for i in range(30):
                summ = await reg.update_edge(
                    replace(summ, trigger=Trigger.any_of(Trigger.count(20 + i % 2),
                                                         Trigger.age(600))),
                    expected_version=summ.version)
                if i % 3 == 0:
                    await reg.install_edge(idle)
                elif i % 3 == 2:
                    await reg.remove_edge(idle.id)

        await asyncio.gather(writes(), churn())

        async def done() -> str | bool:
            return await reach_report(bb, clean_redis, ["c1"], list(h.edges)) or True

        await until(done, 60, "every write reaching its edges through the churn", w)
        assert w.poll() is None
    finally:
        await reg.aclose()
