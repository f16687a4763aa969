"""The run behind ``bench/consolidation_quality.py``: LoCoMo conversations stored in working
memory, consolidated by the default edges in in-process workers, then recalled from the
consolidated levels only.

Each conversation is one agent. Its sessions are written in order with
``AgentMemory.add_messages`` (the library's conversation API, as ``bench/locomo.py`` uses
it, but into the working level, where the default edges start), session ``n`` of every
conversation together; after each round the workers run until nothing is buffered,
pending or undelivered (the **settled** state). The default edges keep their counts, but
their time bounds (10 minutes for the summaries, an hour for the long-term levels) become
:data:`SESSION_GAP_S`: LoCoMo's sessions lie days apart, so every time bound fires between
two sessions, which the run reproduces without waiting an hour per session.

Nothing here scores: :func:`run` returns what the metrics need (every entry of the
consolidated levels, which entry each turn became, the hits of each question).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from bench.locomo import scored, sessions_of
from blackboard import Blackboard, Entry
from cli.demo import _backlog
from memory import AgentMemory, MemoryLevel, MemoryQuery
from memory.conversation import MESSAGE_KIND
from memory.naming import agent_scope
from memory.registry import Registry
from memory.subscriptions import Trigger
from workers.roles import BUS_GROUP_ROLES, EDGE_ROLES
from workers.settings import WorkerSettings
from workers.worker import Worker

#: The consolidated levels: what "long-term only" recall searches (not working memory).
LEVELS = (MemoryLevel.STM, MemoryLevel.EPISODIC, MemoryLevel.SEMANTIC, MemoryLevel.PROCEDURAL)
#: Seconds that stand for the days between two sessions (every edge's time bound).
SESSION_GAP_S = 1.0
#: Worker timings short enough for a bench (the defaults suit a long-running deployment).
FAST = WorkerSettings(heartbeat_ms=200, lease_ttl_ms=1000, block_ms=200, claim_idle_ms=500,
                      trigger_check_ms=100, edges_refresh_ms=300)
K = 10
#: How deep a long-term-only question is asked (the raw turns, once cut from the answer
#: after it, are now deleted before: see _without_raw_turns).
DEPTH = 300


@dataclass(slots=True)
class Stored:
    """One conversation after the run."""

    sample: dict[str, Any]
    agent: str
    #: entry id -> dia_id of every turn written (working memory is capped: kept here)
    dia_of: dict[str, str] = field(default_factory=dict)
    #: level -> every entry of the agent's scope of that level once settled
    levels: dict[MemoryLevel, list[Entry]] = field(default_factory=dict)
    #: per question of the sample (same order as ``sample["qa"]``): the hits' entries
    hits: list[list[Entry]] = field(default_factory=list)


def say(msg: str) -> None:
    """A progress line on stderr (stdout carries the report)."""
    print(msg, file=sys.stderr, flush=True)


async def _install(bb: Blackboard, reg: Registry, mem: AgentMemory) -> None:
    h = await mem.install_default_hierarchy()
    for e in h.edges:
        t = e.trigger
        gap = Trigger(min_count=t.min_count, max_age=SESSION_GAP_S)
        await reg.save_edge(dataclasses.replace(e, trigger=gap))


async def _settle(bb: Blackboard, limit_s: float) -> None:
    """Until nothing is buffered, pending or undelivered, twice a gap apart (an age
    trigger fires the last small batches in between)."""
    deadline, idle = time.monotonic() + limit_s, 0
    while time.monotonic() < deadline:
        idle = idle + 1 if await _backlog(bb) == 0 else 0
        if idle >= 2:
            return
        await asyncio.sleep(1.5 * SESSION_GAP_S if idle else 0.2)
    raise RuntimeError(f"consolidation did not settle within {limit_s:.0f} s")


async def _write_rounds(bb: Blackboard, mems: dict[str, AgentMemory],
                        stored: list[Stored]) -> None:
    sessions = {s.agent: sessions_of(s.sample) for s in stored}
    rounds = max((len(v) for v in sessions.values()), default=0)
    for n in range(rounds):
        for s in stored:
            if n < len(sessions[s.agent]):
                name, msgs = sessions[s.agent][n]
                out = await mems[s.agent].add_messages(name, msgs, MemoryLevel.WORKING)
                s.dia_of.update({e.id: str(m.metadata["dia_id"])  # type: ignore[index]
                                 for e, m in zip(out, msgs, strict=True)})
        await _settle(bb, 600)
        say(f"  session round {n + 1}/{rounds} written and consolidated")


async def _settle_vectors(retr: Any, mems: dict[str, AgentMemory]) -> None:
    """Every consolidated entry embedded (the settled state of recall). This code waits
    with ``consistency="semantic"``; the landed code (225f757) had no such query and
    embedded what a search found queued, so there recall is repeated until nothing waits."""
    levels = [lv.value for lv in LEVELS]
    semantic = "consistency" in MemoryQuery.model_fields
    if semantic:
        retr.semantic_timeout = 3600.0
    while True:
        for mem in mems.values():
            q = MemoryQuery(query="warm up", max_results=1, levels=levels)
            await mem.recall(q.model_copy(update={"consistency": "semantic"}) if semantic else q)
        if semantic or not retr.pending_embeddings():
            return
        await asyncio.sleep(0.5)


def raw_turn(e: Entry) -> bool:
    """A message as written (stm keeps identity copies of the turns): not consolidated.
    Told by its value, not its tags: summaries and episodes carry their turns' tags."""
    return isinstance(e.value, dict) and e.value.get("kind") == MESSAGE_KIND


async def _without_raw_turns(bb: Blackboard, retr: Any, stored: list[Stored]) -> None:
    """Delete stm's copies of the messages, as their expiry would, and wait until recall no
    longer holds them: long-term-only recall ranks the consolidated entries among
    themselves. (Asked with the copies still indexed and only cut from the answer, the
    2,760 copies of the dev split took the top of every ranking, and what recall returned
    depended on how deep it was asked: long-term-only R@10 0.363 at 300 deep.) ``levels``
    keeps them: provenance chains reach the turns through them."""
    gone: list[str] = []
    for s in stored:
        stm = bb.scope(agent_scope(s.agent, MemoryLevel.STM))
        for e in s.levels[MemoryLevel.STM]:
            if raw_turn(e):
                await stm.delete(e.id)  # one by one: the landed tree has no delete_many
                gone.append(e.id)
    deadline = time.monotonic() + 120
    while any(retr.engine.get(i) is not None for i in gone):
        if time.monotonic() > deadline:
            raise RuntimeError("recall still holds deleted copies after 120 s")
        await asyncio.sleep(0.2)


async def _ask(mem: AgentMemory, question: str) -> list[Entry]:
    """The top-K of the consolidated levels (long-term only: the raw turns deleted before,
    :func:`_without_raw_turns`; any still found is left out), asked :data:`DEPTH` deep as
    before they were deleted. Uncollapsed:
    this code folds a summary or episode holding a turn's words into that turn's hit
    (retrieval.collapse), which would drop it with the turn; the landed code folded only
    copies of one origin, and has no such option."""
    q = MemoryQuery(query=question, max_results=DEPTH, levels=[lv.value for lv in LEVELS])
    if "collapse" in MemoryQuery.model_fields:
        q = q.model_copy(update={"collapse": False})
    return [h.entry for h in await mem.recall(q) if not raw_turn(h.entry)][:K]


async def run(url: str, data: list[dict[str, Any]], settings: WorkerSettings = FAST,
              embedder: Any = None) -> list[Stored]:
    from retrieval import Retriever

    run_id = f"{int(time.time())}"  # never touch others' data on a given Redis
    stored = [Stored(s, f"{s['sample_id']}-{run_id}") for s in data]
    async with Blackboard.connect(url) as bb:
        await bb.ensure_groups(list(BUS_GROUP_ROLES))
        retr = Retriever(bb, embedder=embedder)
        reg = Registry(bb)
        mems = {s.agent: AgentMemory(bb, s.agent, retriever=retr, registry=reg) for s in stored}
        for mem in mems.values():
            await _install(bb, reg, mem)
        workers = [Worker(bb, r, settings) for r in EDGE_ROLES]
        for w in workers:
            await w.start()
        try:
            await _write_rounds(bb, mems, stored)
        finally:
            for w in workers:
                await w.stop()
        for s in stored:
            s.levels = {lv: await bb.scope(agent_scope(s.agent, lv)).entries(limit=None)
                        for lv in LEVELS}
        say("  embedding the consolidated entries")
        await _settle_vectors(retr, mems)
        say("  leaving the raw turns out (stm's copies of the messages, as once they expire)")
        await _without_raw_turns(bb, retr, stored)
        say("  asking the questions")
        for s in stored:
            s.hits = [await _ask(mems[s.agent], qa["question"]) if scored(qa) else []
                      for qa in s.sample.get("qa", [])]
        for mem in mems.values():
            await mem.aclose()
        await retr.aclose()
        await reg.aclose()
    return stored
