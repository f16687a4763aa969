"""``blackboard demo``: a team of scripted agents works while worker processes consolidate.

Starts an embedded redis-server unless a URL is given, installs each agent's memory
hierarchy, starts one worker process per role and waits for their heartbeats, lets the
agents work (actions go through ``@mem.observe``), waits for consolidation, then shows
what memory learned (:mod:`cli.demo_report`). Every phase has a progress line saying
what it waits for; each agent has its own bar.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

from blackboard import Blackboard, BlackboardError, InvalidArgument
from blackboard.redact import mask_url
from memory import AgentMemory, MemoryLevel
from memory.memory_map import MemoryMap
from memory.producers import CallRecord, Observation
from memory.registry import Registry
from memory.subscriptions import Trigger
from retrieval.embedders import load_default_embedder
from workers.embedded import redis_or_embedded
from workers.heartbeat import list_workers
from workers.roles import BUS_GROUP_ROLES, EDGE_ROLES, ROLES
from workers.stats import collect_stats

from .demo_agents import Step, script
from .demo_report import QUERIES, TEAM, build_report, print_report
from .output import console, err_console, print_json
from .phases import Phases
from .supervisor import worker_command, worker_env

__all__ = ["install_agents", "run_agent", "run_demo"]

#: The demo shortens trigger times so consolidation happens within the run.
DEMO_TRIGGER = Trigger.any_of(Trigger.count(12), Trigger.age(1.0))
WORKER_ENV = {
    "BLACKBOARD_WORKER_HEARTBEAT_MS": "300",
    "BLACKBOARD_WORKER_LEASE_TTL_MS": "1500",
    "BLACKBOARD_WORKER_TRIGGER_CHECK_MS": "200",
    "BLACKBOARD_WORKER_EDGES_REFRESH_MS": "500",
    "BLACKBOARD_WORKER_BLOCK_MS": "200",
}
WORKERS_START_S = 90.0  # importing numpy/faiss in 7 processes on 2 cores takes a while


async def install_agents(bb: Blackboard, agents: list[str]) -> None:
    """Each agent's memory hierarchy, its edges firing on the demo's trigger."""
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


async def run_agent(bb: Blackboard, name: str, steps: int, seed: int,
                    tick: Callable[[], None] = lambda: None) -> int:
    """One scripted agent at work (:func:`cli.demo_agents.script`): actions through an
    observed callable per tool, observations stored; -> steps taken."""
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
                await mem.store({"text": step.text}, MemoryLevel.WORKING, tags=step.tags,
                                metadata={"agent": name})
            n += 1
            tick()
        await mem.flush()
        return n


async def _backlog(bb: Blackboard, roles: tuple[str, ...] = EDGE_ROLES) -> int:
    """Events ``roles`` have not finished: buffered, in flight, pending in a group, or not
    yet delivered to it (its last delivered id behind the bus's newest)."""
    n = 0
    st = await collect_stats(bb)
    buses = [bb.bus(b.partition).stream for b in st.buses]
    newest = await bb.reads.newest_ids(buses)
    for b, bus in zip(st.buses, buses, strict=True):
        n += await bb.pending(b.partition).backlog()
        for g in b.groups:
            if g.role not in roles:
                continue
            behind = g.lag if g.lag is not None else int(g.last_delivered != newest[bus])
            n += g.pending + behind
    return n


async def _unembedded(bb: Blackboard) -> int:
    """Entries waiting for the index worker's vector (its queue, not a bus group)."""
    return (await collect_stats(bb)).totals()["unembedded"]


async def _await_workers(bb: Blackboard, procs: list[subprocess.Popen[bytes]],
                         ph: Phases) -> None:
    with ph.phase(f"starting {len(procs)} worker processes", total=len(procs)) as task:
        deadline = time.monotonic() + WORKERS_START_S
        pids = {p.pid for p in procs}
        while True:
            dead = [(r, p.returncode) for r, p in zip(ROLES, procs, strict=True)
                    if p.poll() is not None]
            if dead:
                role, code = dead[0]
                raise BlackboardError(
                    f"worker {role} exited with code {code} at start; run `blackboard worker "
                    f"--role {role}` to see why")
            up = len({w.pid for w in await list_workers(bb)} & pids)
            ph.update(task, completed=up)
            if up == len(procs):
                return
            if time.monotonic() > deadline:
                raise BlackboardError(f"only {up} of {len(procs)} workers sent a heartbeat "
                                      f"in {WORKERS_START_S:.0f}s")
            await asyncio.sleep(0.3)


async def _drain(ph: Phases, what: str, left_of: Callable[[], Awaitable[int]],
                 seconds: float, unit: str = "events") -> bool:
    """Wait until ``left_of()`` is 0 twice in a row (the state lives in Redis, so polling
    it is the way); the line shows what is left."""
    with ph.phase(what, total=None) as task:
        deadline = time.monotonic() + seconds
        idle = 0
        while time.monotonic() < deadline:
            left = await left_of()
            ph.note(task, f"{what}: waiting on {left} {unit}")
            # Idle twice, 1.5 s apart: age triggers fire the last, small batches.
            idle = idle + 1 if left == 0 else 0
            if idle >= 2:
                ph.note(task, f"{what}: done")
                return True
            await asyncio.sleep(1.5 if left == 0 else 0.3)
        ph.note(task, f"{what}: gave up after {seconds:.0f}s")
        return False


async def _main(url: str, names: list[str], steps: int, procs: list[subprocess.Popen[bytes]],
                workers: bool, ph: Phases) -> tuple[dict[str, Any], MemoryMap]:
    async with Blackboard.connect(url) as bb:
        # the model loads in a thread meanwhile: the recall at the end does not wait for it
        warm = asyncio.ensure_future(asyncio.to_thread(load_default_embedder))
        with ph.phase(f"installing memory for {len(names)} agents"):
            await bb.ensure_groups(list(BUS_GROUP_ROLES))
            await install_agents(bb, names)
        if procs:
            await _await_workers(bb, procs, ph)
        # A script finishes the task in hand, so it may run a few steps past ``steps``.
        bars = {n: ph.add(f"{n} working", total=sum(1 for _ in script(n, steps, 7)))
                for n in names}
        done = await asyncio.gather(*(run_agent(bb, n, steps, 7, ph.ticker(bars[n]))
                                      for n in names))
        if workers or await list_workers(bb):
            settled = await _drain(ph, "workers consolidating",
                                   lambda: _backlog(bb, EDGE_ROLES), 60)
            # The index worker embeds every entry and stores its vector; recall here then
            # reads the vectors instead of embedding the whole backlog itself again.
            await _drain(ph, "index worker embedding", lambda: _unembedded(bb), 60, "entries")
        else:
            settled = False
            console.print("no live workers: nothing consolidates (drop --no-workers)")
        with ph.phase(f"recall ({len(QUERIES)} questions)") as task:
            loaded = await warm
            if loaded is not None:
                # short: with the phase's own time after it, the line stays within 80
                # columns even when the model took 10 s or more to load
                ph.note(task, f"recall ({len(QUERIES)} questions; model loaded in "
                              f"{loaded:.1f}s while agents ran)")
            report, mmap = await build_report(bb, names[0])
    report["steps"] = sum(done)
    report["settled"] = settled
    return report, mmap


#: A worker exits within 10 s of SIGTERM (workers.process); the demo waits a bit longer.
REAP_GRACE_S = 15.0


def _reap(p: subprocess.Popen[bytes], grace: float = REAP_GRACE_S) -> tuple[int, str]:
    """The worker's exit code and, when it is not 0, what happened in words: one still
    running ``grace`` seconds after SIGTERM is killed, which is said instead of a bare -9."""
    try:
        code = p.wait(grace)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return 1, f"still running {grace:.0f}s after SIGTERM, so it was killed"
    if code < 0:
        return 1, f"killed by signal {-code} (not by the demo)"
    return code, "" if code == 0 else f"exited with code {code}"


def _start_workers(url: str, logs: str) -> list[subprocess.Popen[bytes]]:
    """One process per role, each logging to ``<logs>/<role>.log`` (shown if it fails)."""
    env = worker_env(url) | WORKER_ENV
    procs = []
    for role in ROLES:
        with open(os.path.join(logs, f"{role}.log"), "wb") as log:
            procs.append(subprocess.Popen(worker_command(role), env=env,
                                          stdout=subprocess.DEVNULL, stderr=log))
    return procs


def _say_what_happened(logs: str, failures: list[tuple[str, str]]) -> list[str]:
    """One line per worker that did not exit 0, with the last line of its log."""
    lines = []
    for role, what in failures:
        try:
            with open(os.path.join(logs, f"{role}.log"), errors="replace") as f:
                tail = [ln.strip() for ln in f.read().splitlines() if ln.strip()][-1:]
        except OSError:
            tail = []
        lines.append(f"worker {role}: {what}" + (f"; its log ends: {tail[0][:200]}"
                                                 if tail else ""))
    return lines


def run_demo(url: str | None, *, agents: int = 3, steps: int = 120, workers: bool = True,
             json_out: bool = False) -> int:
    if agents < 1 or steps < 1:
        raise InvalidArgument(f"the demo needs at least 1 agent and 1 step "
                              f"(got {agents} agents, {steps} steps)")
    t0 = time.perf_counter()
    names = [f"agent{i + 1}" for i in range(agents)]
    ph = Phases(console, quiet=json_out)
    given = url or os.environ.get("BLACKBOARD_REDIS_URL")
    codes: list[int] = []
    problems: list[str] = []
    with contextlib.ExitStack() as stack:
        stack.enter_context(ph)
        with ph.phase(f"Redis at {mask_url(given)}" if given else "starting redis-server"):
            redis_url = stack.enter_context(redis_or_embedded(url))
        logs = stack.enter_context(tempfile.TemporaryDirectory(prefix="bb-demo-"))
        procs = _start_workers(redis_url, logs) if workers else []
        try:
            report, mmap = asyncio.run(_main(redis_url, names, steps, procs, workers, ph))
        finally:
            for p in procs:
                p.terminate()
            reaped = [_reap(p) for p in procs]
            codes = [c for c, _ in reaped]
            problems = _say_what_happened(
                logs, [(r, what) for r, (_, what) in zip(ROLES, reaped, strict=True) if what])
            for line in problems:  # stderr: --json keeps stdout one document
                err_console.print(line, highlight=False, markup=False)
    report["worker_exit_codes"] = codes
    report["worker_problems"] = problems
    report["seconds"] = round(time.perf_counter() - t0, 1)
    if json_out:
        print_json(report)
    else:
        print_report(report, names[0], mmap)
        console.print(
            f"{report['steps']} agent steps, {len(procs)} worker processes "
            f"(exit codes {codes}), {report['seconds']}s", highlight=False)
    return 0 if all(c == 0 for c in codes) else 1
