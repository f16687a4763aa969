"""Scaling: worker processes of one role share the partitions by leases; a dead worker's
partitions move to the survivor within the lease TTL; SIGTERM drains and leaves cleanly."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable

import redis
from workers_support import FAST, WorkerProcs

from blackboard import Blackboard, WriteRequest
from blackboard import keys as K
from blackboard.keys import PartitionKeys
from memory.registry import Registry
from memory.subscriptions import MemorySubscription, Trigger

P = 8
ROLE = "summarize"
HEARTBEAT_S = int(FAST["BLACKBOARD_WORKER_HEARTBEAT_MS"]) / 1000
LEASE_TTL_S = int(FAST["BLACKBOARD_WORKER_LEASE_TTL_MS"]) / 1000


async def until(pred: Callable[[], Awaitable[bool]], limit_s: float, what: str) -> float:
    """Poll ``pred`` every 20 ms; the seconds it took. Fails after ``timeout``."""
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        if await pred():
            return time.monotonic() - start
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out after {limit_s}s waiting for {what}")


def _now_ms(r: redis.Redis) -> int:
    sec, usec = r.time()
    return int(sec) * 1000 + int(usec) // 1000


def holder_beats(r: redis.Redis) -> dict[str, int]:
    """Holder of the role -> the last beat of its process, from the lease table."""
    table = {k.decode(): v.decode() for k, v in r.hgetall(K.lease_table()).items()}
    out = {}
    for k, proc in table.items():
        if k.startswith(f"w:{ROLE}:") and f"b:{proc}" in table:
            out[k.split(":", 2)[2]] = int(table[f"b:{proc}"])
    return out


def lease_holders(r: redis.Redis) -> dict[int, str]:
    """Partition -> holder of each live lease in the lease table (read from Redis): a
    lease whose holder's process beat within the lease TTL."""
    holders = {k.decode(): v.decode() for k, v in r.hgetall(K.lease_table()).items()
               if k.startswith(f"h:{ROLE}:".encode())}
    beats, now = holder_beats(r), _now_ms(r)
    out = {}
    for p in range(P):
        holder = holders.get(f"h:{ROLE}:{p}")
        if holder in beats and now - beats[holder] < LEASE_TTL_S * 1000:
            out[p] = holder
    return out


def worker_pid(r: redis.Redis, worker_id: str) -> int | None:
    pid = r.hget(K.worker(worker_id), "pid")
    return None if pid is None else int(pid)


def holders_by_pid(r: redis.Redis) -> Counter[int | None]:
    return Counter(worker_pid(r, tok) for tok in lease_holders(r).values())


async def _edge(bb: Blackboard) -> None:
    reg = Registry(bb)
    await reg.save_edge(
        MemorySubscription(
            "agent:*:working", "agent:{1}:stm", "summarize",
            params={"max_batch": 100}, trigger=Trigger.count(20),
        )
    )
    await reg.aclose()


async def test_two_workers_share_then_survivor_takes_all(
    bb: Blackboard, clean_redis: redis.Redis, worker_procs: WorkerProcs
) -> None:
    r = clean_redis
    await _edge(bb)
    w1 = worker_procs.start(ROLE)
    w2 = worker_procs.start(ROLE)

    async def fair() -> bool:
        c = holders_by_pid(r)
        return len(lease_holders(r)) == P and c == Counter({w1.pid: P // 2, w2.pid: P // 2})

    await until(fair, 15, f"each worker to hold {P // 2} leases")
    # Stable: still fair a few heartbeats later (no ping-pong of partitions).
    await asyncio.sleep(4 * HEARTBEAT_S)
    assert await fair(), holders_by_pid(r)
    # Every lease lasts only while its holder beats: each holder's last beat is younger
    # than the lease TTL (renewed by the beat, not permanent).
    beats, now = holder_beats(r), _now_ms(r)
    assert len(beats) == 2
    for at in beats.values():
        assert 0 <= now - at < LEASE_TTL_S * 1000

    worker_procs.kill(w1)  # kill -9: no release, no heartbeat removal
    killed_at = time.monotonic()

    async def survivor_holds_all() -> bool:
        return holders_by_pid(r) == Counter({w2.pid: P})

    await until(survivor_holds_all, 10, "the survivor to hold every partition")
    took = time.monotonic() - killed_at
    print(f"takeover after kill -9: {took:.3f}s (lease ttl {LEASE_TTL_S}s)")
    # The dead worker's leases lapse after at most lease_ttl; the survivor's next heartbeat
    # (after the dead one drops out of the live count, 3 beats) takes them.
    bound = LEASE_TTL_S + 2 * HEARTBEAT_S + 0.6
    assert took <= bound, f"takeover took {took:.2f}s > {bound:.2f}s"
    assert worker_procs.terminate(w2) == 0


async def test_sigterm_finishes_batch_releases_leases_and_exits_0(
    bb: Blackboard, clean_redis: redis.Redis, worker_procs: WorkerProcs
) -> None:
    r = clean_redis
    await _edge(bb)
    # The fire pauses 1.5 s between writing its output and trimming its buffer; SIGTERM
    # lands inside that pause, and the worker must still complete the batch.
    # Long lease and heartbeat lifetimes: gone keys then prove release, not lapse.
    w = worker_procs.start(
        ROLE,
        BLACKBOARD_WORKER_CRASH_WINDOW_MS="1500",
        BLACKBOARD_WORKER_HEARTBEAT_MS="2000",
        BLACKBOARD_WORKER_LEASE_TTL_MS="30000",
    )
    await until(lambda: _async(len(lease_holders(r)) == P), 10, "the worker to hold all leases")
    wid = lease_holders(r)[0]
    assert r.exists(K.worker(wid)) and r.zscore(K.workers_of(ROLE), wid) is not None

    scope = bb.scope("agent:a1:working")
    es = await scope.write_many(
        [WriteRequest(f"step {i}: checked the build log", tags={"build"}) for i in range(20)]
    )
    part = PartitionKeys(scope.partition)

    async def in_flight() -> bool:
        return bool(r.hlen(part.inflight))

    await until(in_flight, 10, "a batch to be in flight")
    await asyncio.sleep(0.2)
    t0 = time.monotonic()
    code = await asyncio.to_thread(worker_procs.terminate, w)
    stderr = w.stderr.read().decode() if w.stderr else ""
    assert code == 0, stderr
    assert time.monotonic() - t0 >= 0.9, "exited before its batch's crash window ended"
    # The batch was finished: output written, buffer trimmed, nothing in flight.
    assert r.hlen(part.inflight) == 0
    assert r.scard(part.pendings) == 0
    stm = await bb.scope("agent:a1:stm").entries(limit=None)
    assert len(stm) == 1
    assert sorted(stm[0].metadata["provenance"]["sources"]) == sorted(e.id for e in es)
    # Leases released (fields gone, not left to lapse), its beat and heartbeat removed.
    assert [k for k in r.hkeys(K.lease_table()) if k.startswith(f"h:{ROLE}:".encode())] == []
    assert not r.hexists(K.lease_table(), f"w:{ROLE}:{wid}")
    assert not r.exists(K.worker(wid))
    assert r.zscore(K.workers_of(ROLE), wid) is None
    groups = {g["name"].decode(): g for g in r.xinfo_groups(part.bus)}
    assert groups[ROLE]["pending"] == 0


async def _async(v: bool) -> bool:
    return v
