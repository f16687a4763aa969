"""``blackboard demo``: a team of scripted agents works while worker processes consolidate.

Starts an embedded redis-server unless a URL is given, installs each agent's memory
hierarchy, starts one worker process per role, lets the agents work (actions go through
``@mem.observe``), waits for consolidation, then shows the memory map, recalls with their
score breakdown, a learned procedure, a semantic fact with its evidence and team memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import subprocess
import time
from typing import Any

from rich.progress import Progress

from blackboard import Blackboard, Entry
from blackboard.keys import PartitionKeys
from memory import AgentMemory, MemoryLevel
from memory.producers import CallRecord, Observation
from memory.registry import Registry
from memory.render import render_map
from memory.subscriptions import Trigger

from .demo_agents import Step, script
from .embedded import redis_or_embedded
from .output import console, print_json
from .settings import CONSUMING_ROLES, ROLES
from .supervisor import worker_command
from .transform import ROLE_TRANSFORMERS

__all__ = ["run_demo"]

TEAM = "ops"
#: The demo shortens trigger times so consolidation happens within the run.
DEMO_TRIGGER = Trigger.any_of(Trigger.count(12), Trigger.age(1.0))
WORKER_ENV = {
    "BLACKBOARD_WORKER_HEARTBEAT_MS": "300",
    "BLACKBOARD_WORKER_LEASE_TTL_MS": "1500",
    "BLACKBOARD_WORKER_TRIGGER_CHECK_MS": "200",
    "BLACKBOARD_WORKER_EDGES_REFRESH_MS": "500",
    "BLACKBOARD_WORKER_BLOCK_MS": "200",
}


async def _install(bb: Blackboard, agents: list[str]) -> None:
    reg = Registry(bb)
    try:
        for a in agents:
            async with AgentMemory(bb, a, teams=[TEAM], registry=reg) as mem:
                h = await mem.install_default_hierarchy()
            for e in h.edges:
                await reg.save_edge(dataclasses.replace(e, trigger=DEMO_TRIGGER))
    finally:
        await reg.aclose()


def _extract(call: CallRecord) -> Observation:
    step: Step = call.args[0]
    return Observation(
        {"text": step.text, "action": step.action},
        tags=step.tags | {"success" if call.ok else "failure"},
        metadata={"agent": step.agent},
    )


async def _agent(bb: Blackboard, name: str, steps: int, seed: int, tick: Any) -> int:
    async with AgentMemory(bb, name, teams=[TEAM]) as mem:
        # One observed callable per tool, as an agent would have: the producer tags each
        # call action_type:<tool name> and success/failure from whether it raised.
        tools: dict[str, Any] = {}

        def tool(action: str) -> Any:
            if action not in tools:

                async def run(step: Step) -> str:
                    if not step.ok:
                        raise RuntimeError(f"{step.action} failed")
                    return "done"

                run.__name__ = run.__qualname__ = action
                tools[action] = mem.observe(run, extractor=_extract)
            return tools[action]

        n = 0
        for step in script(name, steps, seed):
            if step.kind == "action" and step.action:
                with contextlib.suppress(RuntimeError):  # the producer recorded the failure
                    await tool(step.action)(step)
            else:
                await mem.store(
                    {"text": step.text},
                    MemoryLevel.WORKING,
                    tags=step.tags,
                    metadata={"agent": name},
                )
            n += 1
            tick()
        await mem.flush()
        return n


async def _settled(bb: Blackboard) -> bool:
    """No buffered, in-flight or undelivered dataflow left."""
    for p in range(bb.partitions):
        pk = PartitionKeys(p)
        if await bb.client.scard(pk.pendings) or await bb.client.hlen(pk.inflight):
            return False
        try:
            groups = await bb.client.xinfo_groups(pk.bus)
        except Exception:
            continue
        for g in groups:
            name = g["name"].decode() if isinstance(g["name"], bytes) else g["name"]
            if name not in ROLE_TRANSFORMERS:
                continue  # the index role catches up on its own; recall embeds what it lacks
            if int(g["pending"]) or g.get("lag") not in (0, None):
                return False
    return True


def _text(e: Entry) -> str:
    v = e.value
    if isinstance(v, dict):
        for k in ("text", "summary", "statement", "claim", "title"):
            if isinstance(v.get(k), str):
                return str(v[k])
    return str(v)[:160]


async def _report(bb: Blackboard, agents: list[str], json_out: bool) -> dict[str, Any]:
    a = agents[0]
    out: dict[str, Any] = {}
    async with AgentMemory(bb, a, teams=[TEAM]) as mem:
        mmap = await mem.memory_map()
        out["map"] = mmap.to_dict()
        proc = await bb.scope(f"agent:{a}:ltm:procedural").entries(limit=None)
        sem = await bb.scope(f"agent:{a}:ltm:semantic").entries(limit=None)
        epi = await bb.scope(f"agent:{a}:ltm:episodic").entries(limit=3)
        team = await bb.scope(f"team:{TEAM}").entries(limit=3)
        recalls: dict[str, list[Any]] = {}
        for q in ("why did posting to the ledger fail", "Acme Corp payment terms"):
            try:
                hits = await mem.recall(q)
            except Exception as exc:  # retrieval not configured: say so, don't pretend
                recalls[q] = [f"recall unavailable: {exc}"]
                continue
            recalls[q] = hits[:3]
    dlq = {p: await bb.client.xlen(PartitionKeys(p).dlq) for p in range(bb.partitions)}
    out.update(
        procedures=proc,
        semantic=sem,
        episodes=epi,
        team=team,
        recalls=recalls,
        dlq={p: n for p, n in dlq.items() if n},
    )
    if json_out:
        return out
    console.rule("[bold]memory map[/] (agent " + a + ")")
    console.print(render_map(mmap))
    console.rule("[bold]recall[/] (hybrid score breakdown)")
    for q, hits in recalls.items():
        console.print(f"[bold]? {q}[/]")
        for h in hits:
            if hasattr(h, "explain"):
                console.print(f"  {_text(h.entry)[:90]}\n    [dim]{h.explain()}[/]")
            else:
                console.print(f"  {h}")
    console.rule("[bold]learned procedures[/]")
    live = [e for e in proc if "superseded" not in e.tags]
    best: dict[str, Entry] = {}
    for e in sorted(
        live, key=lambda e: (-len(e.value.get("steps", [])) * int(e.value.get("support", 0)), e.id)
    ):
        best.setdefault(str(e.value.get("task_kind")), e)
    for e in best.values():
        v = e.value
        console.print(
            f"  {v.get('task_kind')}: {' → '.join(v.get('steps', []))}  "
            f"support={v.get('support')} success={v.get('success_rate')} "
            f"v{v.get('procedure_version', v.get('version'))}"
        )
    console.rule("[bold]semantic facts[/] (with evidence; a changed belief supersedes the old)")
    for e in sorted(sem, key=lambda e: (e.key or "", e.created_at)):
        v = e.value
        status = "superseded" if "superseded" in e.tags else v.get("status", "active")
        stances = [x.get("stance") for x in v.get("evidence", [])]
        console.print(
            f"  ({status}) {v.get('statement', _text(e))}  confidence={v.get('confidence')} "
            f"evidence: {stances.count('support')} support, "
            f"{stances.count('contradict')} contradict",
            markup=False,
        )
    console.rule("[bold]episodes[/]")
    for e in epi:
        v = e.value
        console.print(
            f"  task {v.get('task')} ({v.get('session')}): {len(v.get('steps', []))} "
            f"steps, actors {', '.join(v.get('actors', []))}, outcome {v.get('outcome')}"
        )
    console.rule(f"[bold]team:{TEAM}[/]")
    for e in team:
        console.print(f"  {_text(e)[:110]}  [dim]{e.metadata.get('attribution', '')}[/]")
    console.print(f"dead-lettered: {sum(out['dlq'].values())}")
    return out


async def _wait_settled(bb: Blackboard, seconds: float) -> bool:
    """Poll until the dataflow is idle (the state lives in Redis, so polling it is the way)."""
    for _ in range(int(seconds / 0.3)):
        if await _settled(bb):
            return True
        await asyncio.sleep(0.3)
    return False


def _start_workers(url: str) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, **WORKER_ENV}
    return [
        subprocess.Popen(
            worker_command(url, role),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for role in ROLES
    ]


async def _main(url: str, agents: int, steps: int, json_out: bool) -> dict[str, Any]:
    names = [f"agent{i + 1}" for i in range(agents)]
    async with Blackboard.connect(url) as bb:
        with Progress(console=console, transient=True, disable=json_out) as progress:
            bar = progress.add_task("agents working", total=agents * steps)
            done = await asyncio.gather(
                *(_agent(bb, n, steps, 7, lambda: progress.advance(bar)) for n in names)
            )
            wait = progress.add_task("workers consolidating", total=None)
            await _wait_settled(bb, 30)
            await asyncio.sleep(1.5)  # age triggers of the last, small batches
            await _wait_settled(bb, 15)
            progress.remove_task(wait)
        report = await _report(bb, names, json_out)
    report["steps"] = sum(done)
    return report


async def _setup(url: str, agents: int) -> None:
    async with Blackboard.connect(url) as bb:
        await bb.ensure_groups(list(CONSUMING_ROLES))
        await _install(bb, [f"agent{i + 1}" for i in range(agents)])


def run_demo(
    url: str | None,
    *,
    agents: int = 3,
    steps: int = 120,
    workers: bool = True,
    json_out: bool = False,
) -> int:
    t0 = time.perf_counter()
    with redis_or_embedded(url) as redis_url:
        asyncio.run(_setup(redis_url, agents))
        procs = _start_workers(redis_url) if workers else []
        try:
            report = asyncio.run(_main(redis_url, agents, steps, json_out))
        finally:
            for p in procs:
                p.terminate()
            codes = [p.wait(30) for p in procs]
    report["worker_exit_codes"] = codes
    report["seconds"] = round(time.perf_counter() - t0, 1)
    if json_out:
        print_json(report)
    else:
        console.print(
            f"{report['steps']} agent steps, {len(ROLES)} worker processes "
            f"(exit codes {report['worker_exit_codes']}), {report['seconds']}s"
        )
    return 0 if all(c == 0 for c in report["worker_exit_codes"]) else 1
