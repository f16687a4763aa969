"""Helpers for the edge tests: waiting on real worker processes, reading edge buffers."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Awaitable, Callable
from typing import Any

import redis

from blackboard import Blackboard, Entry
from blackboard import keys as K
from blackboard.keys import PartitionKeys, partition_of
from memory.subscriptions import MemorySubscription

#: A sync client of one server or of the cluster (the commands used here are single-key).
SyncRedis = redis.Redis | redis.RedisCluster

#: The backstop refresh, out of the way: nothing here may depend on it.
NO_BACKSTOP = {"BLACKBOARD_WORKER_EDGES_REFRESH_MS": "3600000"}


async def until(pred: Callable[[], Awaitable[Any]], limit_s: float, what: str,
                proc: subprocess.Popen[bytes] | None = None) -> Any:
    """Poll ``pred`` until it returns True or a non-string truthy value; on a timeout, the
    last report and the tail of ``proc``'s log."""
    start = time.monotonic()
    last: Any = None
    while time.monotonic() - start < limit_s:
        last = await pred()
        if last is True or (last and not isinstance(last, str)):
            return last
        await asyncio.sleep(0.1)
    log = ""
    if proc is not None:
        proc.kill()
        log = (proc.communicate()[1] or b"").decode(errors="replace")[-4000:]
    raise AssertionError(f"timed out after {limit_s}s waiting for {what}: {last}\n{log}")


def roles_ready(r: SyncRedis, roles: tuple[str, ...], partitions: int) -> bool:
    """Whether the live workers of each role own every partition between them."""
    for role in roles:
        owned: set[int] = set()
        for wid in r.zrange(K.workers_of(role), 0, -1):
            raw = r.hget(K.worker(wid.decode()), "partitions")
            owned |= set(json.loads(raw or b"[]"))
        if owned != set(range(partitions)):
            return False
    return True


async def wait_ready(bb: Blackboard, r: SyncRedis, roles: tuple[str, ...]) -> None:
    async def ready() -> bool:
        return roles_ready(r, roles, bb.partitions)

    await until(ready, 60, f"workers of {roles} owning every partition")


def pending_ids(r: SyncRedis, partitions: int, edge: MemorySubscription,
                source: str, target: str) -> list[str]:
    key = PartitionKeys(partition_of(source, partitions)).pending(edge.id, target)
    return [raw.decode().split("|", 2)[2] for raw in r.lrange(key, 0, -1)]


async def scope_entries(bb: Blackboard, scope: str) -> list[Entry]:
    return await bb.scope(scope).entries(limit=None)
