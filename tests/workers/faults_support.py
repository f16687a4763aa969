"""The fault suite's load and checks (issue 23), shared by its single-Redis and cluster
tests: one agent per partition writing, a real summarize worker consolidating, a fault in
the middle; then 0 acknowledged writes lost, 0 consolidated twice, 0 relay drops, 0 dead
letters, all consolidated within 60 s of the fault clearing, every partition's reader
progressing; and, where a gateway takes part, ``/readyz`` 200 within 5 s of it and its
``/metrics`` showing every partition's reader fresh. The faults themselves, applied to every
master of the target (one server, or a cluster's masters), are here too."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from support_lifecycle import (
    QUICK,
    QUICK_TRIGGERS,
    Ledger,
    Procs,
    dlq_sample,
    dlq_total,
    exactly_once,
    ledger,
    set_triggers,
    wait_for,
    write_steps,
)

from blackboard import Blackboard, BlackboardError
from blackboard.keys import partition_of
from memory.hierarchy import install_default_hierarchy
from tests.gateway.gateway_support import GatewayProc, ready_within, spawn_gateway
from tests.support_secure import Secure
from workers.heartbeat import list_workers

PARTITIONS = 8  # as the gateway's fixtures pin it
#: One agent per partition (their working scopes land on partitions 0..7): a partition
#: that stalls silently leaves its agent's writes unconsolidated.
AGENTS = tuple(f"f{i}" for i in range(PARTITIONS))
#: After the fault, every partition's reader made progress within this (a read that
#: returns, even empty, is progress; QUICK blocks 200 ms).
FRESH_S = 5.0
#: The issue's bounds: consolidated after the fault clears; /readyz 200 after it clears.
CLEAR_WITHIN_S = 60.0
READY_WITHIN_S = 5.0
#: Quick leases and claims (the faults, not the defaults' timers, are under test), but the
#: stall watchdog keeps its default (90 s): a silent stall would outlast the 60 s bound.
WORKER_ENV = dict(QUICK)


@dataclass
class Outcome:
    acked: int
    #: chunks refused (or whose reply was lost), by the error's class name
    refused: Counter[str]
    lost: int
    twice: int
    relay_drops: int
    dlq: int
    stalls: int
    took_s: float
    #: the oldest last progress over the partitions at the end (s)
    oldest_progress_s: float
    #: connections redis-py's cluster client closed while in use, met by the worker as lost
    resets: int


async def _writer(bb: Blackboard, acked: list[str], refused: Counter[str],
                  stop: asyncio.Event) -> None:
    """Steps in chunks of 5 every 50 ms; only acknowledged ids are kept (a chunk refused or
    whose reply was lost is not acknowledged: it may or may not be written)."""
    n = 0
    while not stop.is_set():
        try:
            agent = AGENTS[(n // 5) % len(AGENTS)]
            acked += await write_steps(bb, agent, 5, chunk=5, first=n)
        except (BlackboardError, OSError) as exc:
            refused[type(exc).__name__] += 1
            await asyncio.sleep(0.1)
        n += 5
        await asyncio.sleep(0.05)


async def under_load(bb: Blackboard, procs: Procs, fault: Callable[[], Awaitable[None]],
                     extra_env: dict[str, str] | None = None,
                     alongside: Callable[[], Awaitable[None]] | None = None) -> Outcome:
    """A summarize worker and a writer; ``fault()`` returns when the fault has cleared; the
    load goes on 2 s more; then wait (at most CLEAR_WITHIN_S) for every acknowledged write
    to be consolidated (identity and summarize). ``alongside()`` is awaited while the
    worker starts (another process starting meanwhile: both take seconds to import)."""
    assert {partition_of(f"agent:{a}:working", PARTITIONS) for a in AGENTS} == set(
        range(PARTITIONS))
    for a in AGENTS:
        await install_default_hierarchy(bb, a)
    await set_triggers(bb, {k: QUICK_TRIGGERS[k] for k in ("identity", "summarize")})
    worker = procs.start("summarize", {**WORKER_ENV, **(extra_env or {})})
    if alongside is not None:
        await alongside()

    async def running() -> bool:
        return {p for w in await list_workers(bb) if w.role == "summarize"
                for p in w.partitions} == set(range(PARTITIONS))

    assert await wait_for(running, 60, every=0.2), procs.log_text()[-3000:]
    acked: list[str] = []
    refused: Counter[str] = Counter()
    stop = asyncio.Event()
    load = asyncio.create_task(_writer(bb, acked, refused, stop))
    try:
        await asyncio.sleep(2)
        await fault()
        cleared = time.monotonic()
        await asyncio.sleep(2)
    finally:
        stop.set()
        await load
    assert worker.poll() is None, procs.log_text()[-3000:]

    async def consolidated() -> bool:
        try:
            led = await _ledger(bb)
        except BlackboardError:
            return False
        return set(led.identity) >= set(acked) and set(led.summarize) >= set(acked)

    await wait_for(consolidated, CLEAR_WITHIN_S - (time.monotonic() - cleared))
    took = time.monotonic() - cleared
    led = await _ledger(bb)
    lost_i, twice_i, _ = exactly_once(acked, led.identity)
    lost_s, twice_s, _ = exactly_once(acked, led.summarize)
    workers = await list_workers(bb)
    counters = [w.counters for w in workers]
    now = bb.now_ms()
    ages = {p: (now - t) / 1000 for w in workers if w.role == "summarize"
            for p, t in w.progress.items()}
    assert set(ages) == set(range(PARTITIONS)), ages
    return Outcome(
        len(acked), refused, lost_i + lost_s, twice_i + twice_s,
        sum(c.get("relay_invalid", 0) for c in counters), await dlq_total(bb),
        sum(c.get("stalls", 0) for c in counters), took, max(ages.values()),
        procs.count_in_logs("closed while in use"))


async def _ledger(bb: Blackboard) -> Ledger:
    """Every agent's ledger in one."""
    out = Ledger()
    for a in AGENTS:
        led = await ledger(bb, a)
        out.identity.update(led.identity)
        out.summarize.update(led.summarize)
    return out


def check(name: str, o: Outcome, bb_dlq: object, logs: str) -> None:
    refused = ", ".join(f"{k} {v}" for k, v in sorted(o.refused.items())) or "none"
    print(f"{name}: {o.acked} acknowledged writes (chunks refused: {refused}); lost {o.lost}, "
          f"twice {o.twice}, relay drops {o.relay_drops}, dlq {o.dlq}, stalls {o.stalls}; "
          f"all consolidated {o.took_s:.1f}s after the fault cleared; oldest partition "
          f"progress {o.oldest_progress_s:.1f}s; connections reset under use {o.resets}")
    assert o.acked > 50, o
    assert o.lost == 0, (o, logs[-3000:])
    assert o.twice == 0, o
    assert o.relay_drops == 0, o
    assert o.dlq == 0, bb_dlq
    assert o.took_s <= CLEAR_WITHIN_S, o
    assert o.oldest_progress_s <= FRESH_S, o  # no partition's reader silently stalled


async def with_gateway(tmp_path: Path, secure: Secure, name: str, fault: Callable[[], None],
                       **connect: Any) -> Outcome:
    """``fault()`` (blocking; returns once the fault has cleared) on ``secure`` (a server or
    a cluster) under the load, a gateway taking part; then the checks of :func:`check`,
    /readyz 200 within READY_WITHIN_S and the gateway's /metrics fresh. ``connect``: the
    writer's connection options."""
    procs = Procs(secure.admin_url, tmp_path)
    # The gateway starts while the worker does (each takes seconds to import).
    starting = asyncio.create_task(asyncio.to_thread(spawn_gateway, secure))
    gws: list[GatewayProc] = []
    ready: list[tuple[float | None, str]] = []

    async def gateway_ready() -> None:
        gws.append(await starting)
        took, body = await asyncio.to_thread(ready_within, gws[0].url, 30)
        assert took is not None, f"/readyz not 200 before the fault: {body}"

    async def run_fault() -> None:
        await asyncio.to_thread(fault)
        ready.append(await asyncio.to_thread(ready_within, gws[0].url, READY_WITHIN_S))

    try:
        async with Blackboard.connect(secure.admin_url, partitions=PARTITIONS, **connect) as bb:
            o = await under_load(bb, procs, run_fault, alongside=gateway_ready)
            check(name, o, await dlq_sample(bb), procs.log_text())
        gw = gws[0]
        took, body = ready[0]
        shown = "never" if took is None else f"{took:.2f}s"
        print(f"{name}: /readyz 200 {shown} after the fault cleared")
        assert took is not None, (f"/readyz not 200 within 5 s of the fault clearing: {body}\n"
                                  f"{gw.output()[-3000:]}")
        # the gateway's /metrics shows each partition's reader progressing
        ages = {int(m[1]): float(m[2]) for m in re.finditer(
            r'^blackboard_progress_age_seconds\{partition="(\d+)",role="summarize"\} (\S+)$',
            await asyncio.to_thread(gw.metrics), re.M)}
        print(f"{name}: /metrics progress ages {ages}")
        assert set(ages) == set(range(PARTITIONS)) and max(ages.values()) <= FRESH_S, ages
        assert procs.stop_all() == []
        return o
    finally:
        if not gws:
            with contextlib.suppress(Exception):
                gws.append(await starting)
        for g in gws:
            g.stop()
        procs.close()


# -- the faults, on every master at once (a single Redis is its own one master) ----------------

def pause(masters: Sequence[redis.Redis]) -> None:
    """Writes paused 3 s, then everything 3 s (CLIENT PAUSE ... WRITE came with 6.2)."""
    for mode in ("WRITE", "ALL"):
        for m in masters:
            m.execute_command("CLIENT", "PAUSE", 3000, mode)
        time.sleep(3.2)


def kill(masters: Sequence[redis.Redis]) -> None:
    """Every normal client's connection but this one's killed, three times, 1 s apart:
    the worker's blocking reads and relay, the writer, the gateway's pools."""
    for _ in range(3):
        killed = [int(m.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"))
                  for m in masters]
        assert all(k > 0 for k in killed), killed
        time.sleep(1.0)


def oom(masters: Sequence[redis.Redis], for_s: float) -> None:
    """Each master's maxmemory lowered below its used memory (noeviction: every write is
    refused, OOM) for ``for_s`` seconds, then set back."""
    before = [m.config_get("maxmemory")["maxmemory"] for m in masters]
    for m in masters:
        m.config_set("maxmemory", int(m.info("memory")["used_memory"]) // 2)
    time.sleep(for_s)
    for m, was in zip(masters, before, strict=True):
        m.config_set("maxmemory", was)
