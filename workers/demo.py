"""``blackboard demo``: scripted agents write memory while observers watch it happen.

Deterministic (seeded), no LLM. Starts an embedded redis-server unless a URL is given.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from dataclasses import dataclass, field

from rich.progress import Progress
from rich.table import Table

from blackboard import Blackboard, Event

from .embedded import redis_or_embedded
from .output import console, print_json

__all__ = ["run_demo"]

TASKS = ("parse-invoice", "reconcile-ledger", "email-summary")
ACTIONS = ("search", "read", "extract", "validate", "write")


@dataclass
class DemoReport:
    url: str
    writes: int = 0
    feed_events: int = 0
    bus_events: Counter[str] = field(default_factory=Counter)
    scopes: dict[str, dict[str, object]] = field(default_factory=dict)
    seconds: float = 0.0


async def _agent(
    bb: Blackboard,
    name: str,
    team: str,
    steps: int,
    rnd: random.Random,
    report: DemoReport,
    tick: object,
) -> None:
    working = bb.scope(f"agent:{name}:working")
    shared = bb.scope(f"team:{team}")
    for step in range(steps):
        task = TASKS[(step // 8) % len(TASKS)]
        action = ACTIONS[step % len(ACTIONS)]
        ok = rnd.random() > 0.2
        await working.write(
            {"text": f"{name} did {action} for {task}: {'ok' if ok else 'failed'}", "step": step},
            tags={f"action_type:{action}", f"task:{task}", "success" if ok else "failure"},
            metadata={"agent": name},
        )
        report.writes += 1
        if step % 10 == 9:
            await shared.write(
                {"text": f"{name} finished a round of {task}"},
                tags={"progress", f"task:{task}"},
                metadata={"agent": name},
            )
            report.writes += 1
        tick()  # type: ignore[operator]
        await asyncio.sleep(0)


async def _watch(bb: Blackboard, scope: str, seen: list[Event], stop: asyncio.Event) -> None:
    async for ev in bb.scope(scope).feed("0", block_ms=100):
        seen.append(ev)
        if stop.is_set():
            return


async def _consume(bb: Blackboard, counts: Counter[str], expected: int) -> None:
    async for batch in bb.consume("demo", "demo-1", block_ms=100):
        for ev in batch.events:
            counts[str(ev.type)] += 1
        await batch.ack()
        if sum(counts.values()) >= expected:
            return


async def _main(url: str, agents: int, steps: int, json_out: bool) -> DemoReport:
    rnd = random.Random(7)
    report = DemoReport(url=url)
    t0 = time.perf_counter()
    async with Blackboard.connect(url) as bb:
        await bb.ensure_groups(["demo"])
        names = [f"agent{i + 1}" for i in range(agents)]
        team_events: list[Event] = []
        stop = asyncio.Event()
        watcher = asyncio.create_task(_watch(bb, "team:ops", team_events, stop))
        with Progress(console=console, transient=True, disable=json_out) as progress:
            bar = progress.add_task("agents working", total=agents * steps)
            await asyncio.gather(
                *(
                    _agent(
                        bb,
                        n,
                        "ops",
                        steps,
                        random.Random(rnd.random()),
                        report,
                        lambda: progress.advance(bar),
                    )
                    for n in names
                )
            )
        await asyncio.wait_for(_consume(bb, report.bus_events, report.writes), 30)
        stop.set()
        await bb.scope("team:ops").write({"text": "demo over"}, tags={"progress"})
        await asyncio.wait_for(watcher, 10)
        report.feed_events = len(team_events)
        for sid in await bb.scope_ids():
            sc = bb.scope(sid)
            report.scopes[sid] = {"entries": await sc.count(), "tags": await sc.tags()}
        failures = await bb.scope(f"agent:{names[0]}:working").entries(all_of={"failure"}, limit=3)
        if not json_out:
            console.print(f"[bold]{names[0]}'s latest failures[/] (tag query, newest first):")
            for e in failures:
                console.print(f"  {e.value['text']}")
    report.seconds = time.perf_counter() - t0
    return report


def run_demo(url: str | None, *, agents: int = 3, steps: int = 40, json_out: bool = False) -> int:
    with redis_or_embedded(url) as redis_url:
        report = asyncio.run(_main(redis_url, agents, steps, json_out))
    if json_out:
        print_json(report)
        return 0
    t = Table(title="memory scopes")
    t.add_column("scope")
    t.add_column("entries", justify="right")
    t.add_column("top tags")
    for sid, info in sorted(report.scopes.items()):
        tags: dict[str, int] = info["tags"]  # type: ignore[assignment]
        top = ", ".join(f"{k}={v}" for k, v in sorted(tags.items(), key=lambda kv: -kv[1])[:4])
        t.add_row(sid, str(info["entries"]), top)
    console.print(t)
    console.print(
        f"{report.writes} writes; the bus delivered {sum(report.bus_events.values())} events "
        f"to the 'demo' consumer group {dict(report.bus_events)}; an observer of team:ops "
        f"saw {report.feed_events} events; {report.seconds:.1f}s"
    )
    return 0
