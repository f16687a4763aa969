"""The raw redis-py baseline of ``bench/write_path.py``: the entry both sides write
(:data:`TAGS`, :func:`entry_value`), the same commands per entry that the blackboard sends
(HSET entry with the same fields, ZADD ix, SADD and HINCRBY per tag, ZADD evict, XADD feed,
XADD bus) written in pipelined batches and one entry per round trip, and a raw XADD ->
XREADGROUP BLOCK delivery loop (the send time carried in the event).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import redis.asyncio as aredis

from blackboard.ids import new_ulid

TAGS = ("action", "tool:search")


def entry_value(i: int) -> dict[str, Any]:
    return {"text": f"observation number {i} about the task at hand", "i": i}


def _raw_cmds(pipe: Any, prefix: str, bus: str, i: int) -> None:
    eid = new_ulid()
    now = int(time.time() * 1000)
    tags_json = json.dumps(list(TAGS))
    pipe.hset(
        f"{prefix}e:{eid}",
        mapping={
            "id": eid,
            "scope": "raw",
            "value": json.dumps(entry_value(i), separators=(",", ":")),
            "tags": tags_json,
            "metadata": '{"agent":"a1"}',
            "key": "",
            "importance": "0.5",
            "strength": "1.0",
            "strength_at": now,
            "reinforcements": 0,
            "reinforced_by": "[]",
            "created_at": now,
            "updated_at": now,
            "expires_at": 0,
            "version": 1,
            "source": "[]",
            "op_id": eid,
        },
    )
    pipe.zadd(f"{prefix}ix", {eid: now})
    for tg in TAGS:
        pipe.sadd(f"{prefix}tag:{tg}", eid)
        pipe.hincrby(f"{prefix}tags", tg, 1)
    pipe.zadd(f"{prefix}evict", {eid: 1.0})
    fields = {
        "scope": "raw",
        "type": "written",
        "entry": eid,
        "version": 1,
        "tags": tags_json,
        "at": now,
    }
    pipe.xadd(f"{prefix}feed", fields, maxlen=10000, approximate=True)
    pipe.xadd(bus, fields)


async def bench_raw_pipeline(r: aredis.Redis, n: int, batch: int) -> float:
    prefix, bus = "raw:{r1}:s:raw:", "raw:{r1}:bus"
    t = time.perf_counter()
    for i in range(0, n, batch):
        async with r.pipeline(transaction=False) as pipe:
            for j in range(i, min(n, i + batch)):
                _raw_cmds(pipe, prefix, bus, j)
            await pipe.execute()
    return n / (time.perf_counter() - t)


async def bench_raw_single(r: aredis.Redis, n: int) -> float:
    """One entry's commands per round trip (the raw counterpart of sequential writes)."""
    prefix, bus = "raw:{r2}:s:raw:", "raw:{r2}:bus"
    t = time.perf_counter()
    for i in range(n):
        async with r.pipeline(transaction=False) as pipe:
            _raw_cmds(pipe, prefix, bus, i)
            await pipe.execute()
    return n / (time.perf_counter() - t)


async def latency_raw(r: aredis.Redis, n: int, rate: float) -> list[float]:
    bus = "raw:{r3}:bus"
    await r.xgroup_create(bus, "bench", id="0", mkstream=True)
    lat: list[float] = []

    async def consumer() -> None:
        while len(lat) < n:
            reply = await r.xreadgroup("bench", "c1", {bus: ">"}, count=100, block=1000)
            now = time.perf_counter()
            for _s, items in reply or ():
                for _sid, f in items:
                    lat.append(now - float(f[b"sent"]))
                await r.xack(bus, "bench", *[sid for sid, _ in items])

    task = asyncio.create_task(consumer())
    await asyncio.sleep(0.3)
    for i in range(n):
        await r.xadd(bus, {"sent": repr(time.perf_counter()), "entry": str(i)})
        await asyncio.sleep(1 / rate)
    await asyncio.wait_for(task, 30)
    return lat
