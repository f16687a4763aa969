"""Helpers of the lifecycle and attack tests (issues 11 and 12): real worker processes with
their logs kept, agent steps built so that every long-term transformer's provenance shows
which steps it took in, and a ledger of where each written entry ended up."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import redis

from blackboard import Blackboard, WriteRequest
from blackboard.keys import PartitionKeys
from memory.hierarchy import default_edges
from memory.registry import Registry
from memory.subscriptions import MemorySubscription, Trigger

#: Worker settings that make leases, claims and trigger checks quick. Only for tests whose
#: issue text does not demand the defaults (the crash case runs without them).
QUICK = {
    "BLACKBOARD_WORKER_HEARTBEAT_MS": "200",
    "BLACKBOARD_WORKER_LEASE_TTL_MS": "1000",
    "BLACKBOARD_WORKER_CLAIM_IDLE_MS": "1000",
    "BLACKBOARD_WORKER_TRIGGER_CHECK_MS": "100",
    "BLACKBOARD_WORKER_BLOCK_MS": "200",
    "BLACKBOARD_WORKER_SWEEP_EVERY_S": "0.5",
}

#: The roles the default hierarchy of an agent without teams needs (team edges exist only
#: with teams; the index role serves recall, no edge); ``summarize`` runs the identity and
#: summarize edges, ``collective`` the edges into ``collective``, ``maintenance`` the TTL
#: sweep, ``timeline`` the edges into the tables of contents (their buffers drain too).
HIERARCHY_ROLES = ("summarize", "episodic", "semantic", "procedural", "collective",
                   "timeline", "maintenance")


class Procs:
    """``blackboard worker`` OS processes; stderr of each goes to a log file under ``logdir``
    so a test can search every log (also of killed processes) afterwards."""

    def __init__(self, url: str, logdir: Path) -> None:
        self.url = url
        self.logdir = logdir
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []

    def start(self, role: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = self.logdir / f"worker-{len(self.logs):03d}-{role}.log"
        self.logs.append(log)
        e = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
        with open(log, "wb") as fh:
            p = subprocess.Popen(
                [sys.executable, "-m", "cli", "worker", "--role", role,
                 "--redis-url", self.url],
                env=e, stdout=fh, stderr=subprocess.STDOUT,
            )
        self.procs.append(p)
        return p

    def kill9(self, p: subprocess.Popen[bytes]) -> None:
        p.send_signal(signal.SIGKILL)
        p.wait()

    def stop_all(self, timeout: float = 30) -> list[str]:
        """SIGTERM every live worker at once; what went wrong: a worker that did not exit 0
        within ``timeout`` seconds (with its log's tail)."""
        live = [(p, log) for p, log in zip(self.procs, self.logs, strict=True)
                if p.poll() is None]
        for p, _log in live:
            p.send_signal(signal.SIGTERM)
        problems = []
        for p, log in live:
            try:
                code = p.wait(timeout)
            except subprocess.TimeoutExpired:
                tail = log.read_text(errors="replace")[-600:]
                problems.append(f"{log.name}: still running {timeout:.0f}s after SIGTERM; {tail}")
                continue
            if code != 0:
                tail = log.read_text(errors="replace")[-600:]
                problems.append(f"{log.name}: exit {code} on SIGTERM; {tail}")
        return problems

    def log_text(self) -> str:
        return "\n".join(f.read_text(errors="replace") for f in self.logs if f.exists())

    def count_in_logs(self, needle: str) -> int:
        return self.log_text().count(needle)

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def step_requests(agent: str, start: int, n: int) -> list[WriteRequest]:
    """Working-memory steps that each long-term transformer reports precisely.

    Step i states one fact nobody else states (``semantic`` writes one belief per canonical
    key, its evidence is exactly that step) and belongs to task i // 2 with action types
    check, fix (``procedural`` learns one procedure, check -> fix, counting every task once,
    a task cut by a batch boundary stitched whole). ``episodic`` puts every step into
    exactly one live episode (an open episode a later batch continued is superseded).
    """
    out = []
    for i in range(start, start + n):
        act = "check" if i % 2 == 0 else "fix"
        out.append(WriteRequest(
            {"text": f"Service s{agent}x{i} uses port p{i}."},
            tags={f"task:{agent}-{i // 2}", f"action_type:{act}",
                  *(("success",) if act == "fix" else ())},
        ))
    return out


async def write_steps(bb: Blackboard, agent: str, n: int, chunk: int = 50,
                      level: str = "working", ttl: float | None = None,
                      first: int = 0) -> list[str]:
    """Write steps ``first`` .. ``first + n - 1`` of ``agent`` in ``write_many`` chunks."""
    ids: list[str] = []
    scope = bb.scope(f"agent:{agent}:{level}")
    for s in range(0, n, chunk):
        reqs = step_requests(agent, first + s, min(chunk, n - s))
        if ttl is not None:
            reqs = [replace(r, ttl=ttl) for r in reqs]
        ids += [e.id for e in await scope.write_many(reqs)]
    return ids


#: Quick triggers per transformer for tests that may speed the hierarchy up.
QUICK_TRIGGERS = {
    "identity": Trigger.any_of(Trigger.count(20), Trigger.age(0.5)),
    "summarize": Trigger.any_of(Trigger.count(20), Trigger.age(0.5)),
    "episodic": Trigger.any_of(Trigger.count(50), Trigger.timer(1)),
    "semantic": Trigger.any_of(Trigger.count(50), Trigger.timer(1)),
    "procedural": Trigger.any_of(Trigger.count(50), Trigger.timer(1)),
    "collective_beliefs": Trigger.any_of(Trigger.count(50), Trigger.timer(1)),
    "collective_procedures": Trigger.any_of(Trigger.count(50), Trigger.timer(1)),
}


def _with_trigger(e: MemorySubscription, t: Trigger) -> MemorySubscription:
    return MemorySubscription(e.source, e.target, e.transformer, params=e.params,
                              filter=e.filter, trigger=t, id=e.id)


async def set_triggers(bb: Blackboard, triggers: dict[str, Trigger]) -> None:
    """An operator's explicit change of the shared default edges' triggers
    (``Registry.save_edge`` sets an edge as given, before and after issue 12)."""
    reg = Registry(bb)
    try:
        for e in default_edges("x"):
            if e.transformer in triggers:
                await reg.save_edge(_with_trigger(e, triggers[e.transformer]))
    finally:
        await reg.aclose()


@dataclass
class Ledger:
    """Where an agent's steps went: per working id, its identity copies and summaries in
    stm; per stm step id, its long-term outputs."""

    identity: Counter[str] = field(default_factory=Counter)
    summarize: Counter[str] = field(default_factory=Counter)
    origin_of: dict[str, str] = field(default_factory=dict)  # stm step id -> working id
    episodic: Counter[str] = field(default_factory=Counter)
    semantic: Counter[str] = field(default_factory=Counter)
    procedures: list[list[str]] = field(default_factory=list)
    live_procedures: list[dict[str, Any]] = field(default_factory=list)


def _prov(e: Any) -> tuple[str, list[str]]:
    p = (e.metadata or {}).get("provenance") or {}
    return str(p.get("transformer", "")), list(p.get("sources", []))


async def ledger(bb: Blackboard, agent: str) -> Ledger:
    led = Ledger()
    for e in await bb.scope(f"agent:{agent}:stm").entries(limit=None):
        kind, src = _prov(e)
        if kind == "identity":
            led.identity.update(src)
            for s in src:
                led.origin_of[e.id] = s
        elif kind == "summarize":
            led.summarize.update(src)
    for level, counter in (("episodic", led.episodic), ("semantic", led.semantic)):
        for e in await bb.scope(f"agent:{agent}:ltm:{level}").entries(limit=None):
            if level != "episodic" or "superseded" not in e.tags:
                counter.update(_prov(e)[1])
    for e in await bb.scope(f"agent:{agent}:ltm:procedural").entries(limit=None):
        led.procedures.append(_prov(e)[1])
        if "superseded" not in e.tags:
            led.live_procedures.append(e.value)
    return led


def exactly_once(written: Iterable[str], seen: Counter[str]) -> tuple[int, int, int]:
    """(lost, twice, foreign): written ids never seen, seen more than once, seen but
    never written."""
    w = set(written)
    return (len(w - set(seen)), sum(1 for k, v in seen.items() if k in w and v > 1),
            len(set(seen) - w))


def procedural_report(led: Ledger, steps: Iterable[str]) -> dict[str, Any]:
    """What procedural memory made of the steps: each step the new evidence of exactly one
    procedure version (lost, twice, foreign), and the live procedures' (kind, steps,
    support)."""
    lost, twice, foreign = exactly_once(steps, Counter(s for src in led.procedures for s in src))
    return {"lost": lost, "twice": twice, "foreign": foreign,
            "live": [(v.get("task_kind"), v.get("steps"), v.get("support"))
                     for v in led.live_procedures]}


async def drained(bb: Blackboard, only: tuple[str, ...] | None = None,
                  edges: tuple[str, ...] | None = None) -> bool:
    """No event waits anywhere: inbox/relay lists, groups, buffers, batches in flight.
    ``only``: just the consumer groups named there, and the buffers of the edges named by
    ``edges`` (an edge id, or a transformer: edge ids are ``<transformer>-<digest>``;
    default: the names in ``only``)."""
    c = bb.client
    edges = edges if edges is not None else only

    def mine(name: bytes | str, group: bool) -> bool:
        n = name.decode() if isinstance(name, bytes) else name
        if group:
            return only is None or n in only
        return edges is None or any(n.startswith((f"{o}-", f"{o}:")) for o in edges)

    for p in range(bb.partitions):
        pk = PartitionKeys(p)
        for lst in ("inbox", "relaying"):
            key = getattr(pk, lst, None)
            if key is not None and await c.llen(key):
                return False
        buffers = [k.decode()[len(pk.base) + len(":pending:"):]
                   for k in await c.smembers(pk.pendings)]
        if any(mine(b, False) for b in buffers):
            return False
        inflight = [k.decode()[len(pk.base) + len(":pending:"):]
                    for k in await c.hkeys(pk.inflight)]
        if any(mine(b, False) for b in inflight):
            return False
        if not await c.exists(pk.bus):
            continue
        for g in await c.xinfo_groups(pk.bus):
            if mine(g["name"], True) and (int(g["pending"]) or g.get("lag") not in (0, None)):
                return False
    return True


async def state(bb: Blackboard) -> dict[int, Any]:
    """What is left per partition (for failure messages)."""
    c = bb.client
    out: dict[int, Any] = {}
    for p in range(bb.partitions):
        pk = PartitionKeys(p)
        bufs = {k.decode(): await c.llen(k) for k in await c.smembers(pk.pendings)}
        groups = ([(g["name"], g["pending"], g.get("lag")) for g in await c.xinfo_groups(pk.bus)]
                  if await c.exists(pk.bus) else [])
        out[p] = {"buffers": bufs, "inflight": await c.hgetall(pk.inflight),
                  "groups": groups, "dlq": await c.xlen(pk.dlq)}
    return out


async def wait_for(pred: Callable[[], Awaitable[bool]], within: float,
                   every: float = 0.5) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await pred():
            return True
        await asyncio.sleep(every)
    return await pred()


async def dlq_total(bb: Blackboard) -> int:
    return sum([await bb.client.xlen(PartitionKeys(p).dlq) for p in range(bb.partitions)])


async def wait_done(bb: Blackboard, pred: Callable[[], Awaitable[bool]], within: float,
                    settle: float = 8.0, only: tuple[str, ...] | None = None,
                    edges: tuple[str, ...] | None = None) -> bool:
    """Wait until ``pred`` holds; give up early once nothing has waited anywhere for
    ``settle`` seconds (with quick triggers nothing more can arrive then)."""
    deadline = time.monotonic() + within
    idle_since: float | None = None
    while time.monotonic() < deadline:
        if await pred():
            return True
        if await drained(bb, only, edges):
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > settle:
                return False
        else:
            idle_since = None
        await asyncio.sleep(0.5)
    return await pred()


async def dlq_sample(bb: Blackboard, n: int = 5) -> list[dict[bytes, bytes]]:
    """The first DLQ entries of every partition (their reason, for failure messages)."""
    out: list[dict[bytes, bytes]] = []
    for p in range(bb.partitions):
        out += [f for _id, f in await bb.client.xrange(PartitionKeys(p).dlq, count=n)]
    return out[:n]


@pytest.fixture(params=["single", pytest.param("cluster", marks=pytest.mark.cluster)])
def target_url(request: pytest.FixtureRequest) -> str:
    """An emptied Redis: the suite's one, or the 3-master cluster."""
    if request.param == "single":
        request.getfixturevalue("clean_redis")
        return str(request.getfixturevalue("redis_url"))
    cluster = request.getfixturevalue("cluster")
    for n in cluster.nodes:
        r = redis.Redis(port=n.port)
        r.flushall()
        r.close()
    return str(cluster.url)
