"""Beliefs stored before kinds joined the canonical key (``fact:<subject>:<predicate>``)
are superseded by the next version under the new key: never two live beliefs on a slot."""

from __future__ import annotations

import dataclasses
from typing import Any

from blackboard import Blackboard, Entry
from memory import AgentMemory, MemoryLevel, MemorySubscription
from retrieval.truth import belief_status, belief_valid_from, belief_valid_to
from workers.transform import TransformBridge

SEM = "agent:a1:ltm:semantic"
EDGE = MemorySubscription("agent:*:stm", "agent:{1}:ltm:semantic", "semantic")
OLD, NEW = "fact:acme-corp:lives_in", "fact:world_fact:entity:acme-corp:lives_in"


def _as_before(v: dict[str, Any]) -> dict[str, Any]:
    return {**v, "canonical_key": OLD}


async def _consolidate(bb: Blackboard, done: set[str], legacy: bool = False) -> None:
    stm = [e for e in await bb.scope("agent:a1:stm").entries(limit=None, newest_first=False)
           if e.id not in done]
    done.update(e.id for e in stm)
    reqs = await TransformBridge(bb)(EDGE, SEM, stm, bb.now_ms())
    if legacy:  # as the code before issue 25's kinds wrote it
        reqs = [dataclasses.replace(r, key=OLD, value=_as_before(r.value),
                                    metadata=_as_before(r.metadata)) for r in reqs]
    await bb.scope(SEM).write_many(reqs)


async def _on_slot(bb: Blackboard) -> list[Entry]:
    return [e for e in await bb.scope(SEM).entries(limit=None, all_of=["fact"])
            if e.key in (OLD, NEW)]


async def test_a_belief_under_the_older_key_is_superseded_not_duplicated(
        bb: Blackboard) -> None:
    done: set[str] = set()
    async with AgentMemory(bb, "a1", default_retriever=False) as mem:
        await mem.store("Acme Corp lives in Springfield.", MemoryLevel.STM)
        await _consolidate(bb, done, legacy=True)
        [old] = await _on_slot(bb)
        assert old.key == OLD and belief_status(old) == "active"

        # the same claim again: a reinforced version under the new key, same valid time
        await mem.store("Acme Corp lives in Springfield.", MemoryLevel.STM)
        await _consolidate(bb, done)
        got = {e.id: e for e in await _on_slot(bb)}
        live = [e for e in got.values() if belief_status(e) == "active"]
        assert [e.key for e in live] == [NEW] and live[0].value["supersedes"] == old.id
        assert got[old.id].superseded_by == live[0].id
        assert belief_valid_from(live[0]) == belief_valid_from(old)

        # then the move: one live belief, Shelbyville; the chain ends each version in turn
        for _ in range(3):
            await mem.store("Acme Corp lives in Shelbyville.", MemoryLevel.STM)
        await _consolidate(bb, done)
        got = {e.id: e for e in await _on_slot(bb)}
        live = [e for e in got.values() if belief_status(e) == "active"]
        assert len(live) == 1 and live[0].value["object"] == "Shelbyville"
        assert live[0].key == NEW and len(got) == 3
        moved = got[live[0].value["supersedes"]]
        assert belief_valid_to(moved) == belief_valid_from(live[0])
