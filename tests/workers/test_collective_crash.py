"""Issue 27: kill -9 of the collective role mid-batch loses nothing and counts nothing
twice. Two ``worker --role collective`` processes, each pausing between writing a batch's
collective versions and trimming its buffer (the window a crash must hit), are killed
while six agents' beliefs and procedure versions arrive in rounds. Afterwards every agent
belief and procedure version is the new evidence of exactly one collective version, and
the live collective entries count every round of every agent once."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import redis
from support_lifecycle import (
    QUICK,
    Procs,
    dlq_sample,
    dlq_total,
    drained,
    exactly_once,
    state,
    wait_for,
)

from blackboard import Blackboard, Entry, WriteRequest
from blackboard.keys import PartitionKeys
from memory.hierarchy import default_edges
from memory.registry import Registry
from memory.subscriptions import Trigger

pytestmark = [pytest.mark.slow, pytest.mark.process]  # worker processes (support_lifecycle)

AGENTS = [f"c{i}" for i in range(6)]
KEYS = 8
KINDS = ("invoice", "reconcile")
ROUNDS = 4
KILLS = 4
STEPS = ["check", "fix"]


def _key(k: int) -> str:
    return f"fact:world_fact:entity:site-{k}:lives_in"


def _belief(agent: str, k: int, r: int, at: int) -> WriteRequest:
    """Round ``r`` of ``agent``'s belief on key ``k``: one new link, the same town."""
    town = f"Town{k}"
    link = {"entry": f"ev-{agent}-{k}-{r}", "agent": agent, "at": at, "stance": "support",
            "weight": 1.0, "claim": f"Site {k} lives in {town}", "object": town,
            "negated": False, "scope": f"agent:{agent}:stm", "author": agent,
            "text": f"Site {k} lives in {town}."}
    value = {"subject": f"Site {k}", "predicate": "lives_in", "object": town,
             "negated": False, "statement": f"Site {k} lives in {town}",
             "canonical_key": _key(k), "evidence": [link]}
    return WriteRequest(value, tags={"fact"},
                        metadata={"canonical_key": _key(k), "status": "active"})


def _procedure(kind: str, r: int) -> WriteRequest:
    """Version ``r + 1`` of an agent's procedure for ``kind``: one more successful task."""
    n = r + 1
    variant = {"steps": STEPS, "support": n, "successes": n, "failures": 0}
    value = {"task_kind": kind, "status": "learned" if n >= 2 else "candidate",
             "steps": STEPS, "support": n, "successes": n, "failures": 0,
             "variants": [variant]}
    return WriteRequest(value, tags={"procedure"},
                        metadata={"kind": "procedure", "canonical_key": f"procedure:{kind}",
                                  "procedure_version": n})


async def _collective(bb: Blackboard) -> list[Entry]:
    return await bb.scope("collective").entries(limit=None)


def _sources(es: list[Entry], transformer: str) -> Counter[str]:
    seen: Counter[str] = Counter()
    for e in es:
        prov = e.metadata.get("provenance") or {}
        if prov.get("transformer") == transformer:
            seen.update(prov.get("sources", []))
    return seen


async def test_kill_9_of_the_collective_role_mid_batch_loses_nothing_twice(
    redis_url: str, clean_redis: object, tmp_path: Path
) -> None:
    procs = Procs(redis_url, tmp_path)
    t0 = time.monotonic()
    try:
        async with Blackboard.connect(redis_url, partitions=8) as bb:
            reg = Registry(bb)
            quick = Trigger.any_of(Trigger.count(6), Trigger.age(0.3))
            for e in default_edges("x"):
                if e.target == "collective":  # small batches: many to kill in
                    await reg.save_edge(replace(e, params={"max_batch": 6}, trigger=quick))
            await reg.aclose()
            await bb.ensure_groups(["collective"])
            env = {**QUICK, "BLACKBOARD_WORKER_CRASH_WINDOW_MS": "150"}
            workers = [procs.start("collective", env) for _ in range(2)]
            written: dict[str, list[str]] = {"beliefs": [], "procedures": []}

            async def fired() -> bool:
                return bool(await _collective(bb))

            kills = mid_batch = 0
            rnd = random.Random(27)
            sync = redis.Redis.from_url(redis_url)
            inflight = [PartitionKeys(p).inflight for p in range(bb.partitions)]

            def killer() -> None:
                nonlocal kills, mid_batch
                while kills < KILLS:
                    time.sleep(rnd.uniform(0.4, 0.8))
                    i = rnd.randrange(len(workers))
                    procs.kill9(workers[i])
                    # a batch fixed in flight (pending_head) and not trimmed: most likely
                    # the dead worker's, replayed by the next owner
                    mid_batch += any(sync.hlen(k) for k in inflight)
                    workers[i] = procs.start("collective", env)
                    kills += 1

            t = threading.Thread(target=killer, daemon=True)
            for r in range(ROUNDS):
                for a in AGENTS:
                    at = bb.now_ms() - 1
                    es = await bb.scope(f"agent:{a}:ltm:semantic").write_many(
                        [_belief(a, k, r, at) for k in range(KEYS)])
                    written["beliefs"] += [e.id for e in es]
                    es = await bb.scope(f"agent:{a}:ltm:procedural").write_many(
                        [_procedure(kind, r) for kind in KINDS])
                    written["procedures"] += [e.id for e in es]
                if r == 0:
                    # kills start once the workers fire: one killed while still importing
                    # would test nothing
                    assert await wait_for(fired, 60, every=0.2), procs.log_text()[-3000:]
                    t.start()
                await asyncio.sleep(0.5)
            t.join(60)
            sync.close()
            assert kills == KILLS

            want = len(AGENTS) * ROUNDS

            async def done() -> bool:
                es = await _collective(bb)
                got = _sources(es, "collective_beliefs")
                return (set(got) >= set(written["beliefs"])
                        and set(_sources(es, "collective_procedures")) >= set(
                            written["procedures"])
                        and await drained(bb, ("collective",)))

            finished = await wait_for(done, 90, every=0.3)
            es = await _collective(bb)
            beliefs = exactly_once(written["beliefs"], _sources(es, "collective_beliefs"))
            procedures = exactly_once(written["procedures"],
                                      _sources(es, "collective_procedures"))
            live = [e for e in es if e.superseded_by is None]
            counts: dict[str, Any] = {
                e.key: sum(v["count"] for v in e.metadata["views"].values())
                for e in live if e.metadata.get("kind") == "fact"}
            pooled = {e.key: e.value["support"] for e in live
                      if e.metadata.get("kind") == "procedure"}
            print(f"collective kill -9: {kills} kills ({mid_batch} with a batch in flight), "
                  f"{len(written['beliefs'])} beliefs (lost, twice, foreign) {beliefs}, "
                  f"{len(written['procedures'])} procedure "
                  f"versions {procedures}, {len(es)} collective versions, dlq "
                  f"{await dlq_total(bb)}, {time.monotonic() - t0:.1f}s")
            assert beliefs == (0, 0, 0), await state(bb)
            assert procedures == (0, 0, 0), await state(bb)
            # every round of every agent counted once in the live beliefs' views
            assert counts == {_key(k): want for k in range(KEYS)}
            assert all(e.metadata["agents"] == sorted(AGENTS) and e.metadata["promoted"]
                       for e in live if e.metadata.get("kind") == "fact")
            # each agent's latest version (ROUNDS tasks) pooled once
            assert pooled == {f"procedure:{k}": len(AGENTS) * ROUNDS for k in KINDS}
            assert await dlq_total(bb) == 0, await dlq_sample(bb)
            assert finished, await state(bb)
            assert procs.stop_all() == []
    finally:
        procs.close()
