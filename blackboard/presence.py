"""Worker presence: who runs, for people and ``stats`` (not for leases, see
:mod:`blackboard.lease`).

A worker's record is a hash ``bb:workers:<id>`` that expires unless rewritten; its score
(last beat, ms) in ``bb:workers:role:<role>`` counts a role's live workers without a scan,
and ``bb:workers:roles`` lists the roles that ever had one. :class:`Presence` owns the three.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from . import keys as K
from .scripts import run_script_many

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["Presence"]


class Presence:
    """Every worker's heartbeat record."""

    def __init__(self, bb: Blackboard) -> None:
        self.bb = bb

    async def beat(
        self,
        worker_id: str,
        role: str,
        record: Mapping[str, str | int],
        now: int,
        ttl_ms: int,
        first: bool = False,
    ) -> None:
        """Write (part of) the record and its beat; it expires ``ttl_ms`` after this.
        ``first``: also list ``role`` among the roles (once per worker is enough)."""
        flat = [str(x) for kv in record.items() for x in kv]
        calls = [([K.worker(worker_id)], ["hset", str(ttl_ms), *flat]),
                 ([K.workers_of(role)], ["zadd", "", str(now), worker_id])]
        if first:
            calls.append(([K.worker_roles()], ["sadd", "", role]))
        # beat.lua: allowed while Redis is over maxmemory, so a worker waiting for memory
        # stays listed (one round trip, as the pipeline of plain commands it replaces).
        for reply in await run_script_many(self.bb.client, "beat", calls):
            if isinstance(reply, Exception):
                raise reply

    async def remove(self, worker_id: str, role: str) -> None:
        async with self.bb.client.pipeline(transaction=False) as pipe:
            pipe.delete(K.worker(worker_id))
            pipe.zrem(K.workers_of(role), worker_id)
            await pipe.execute()

    async def live(self, role: str, cutoff_ms: int) -> int:
        """Workers of ``role`` whose last beat is after ``cutoff_ms`` (the others are
        pruned from the role's zset)."""
        key = K.workers_of(role)
        async with self.bb.client.pipeline(transaction=False) as pipe:
            pipe.zremrangebyscore(key, "-inf", cutoff_ms)
            pipe.zcard(key)
            _, n = await pipe.execute()
        return int(n)

    async def records(self) -> list[dict[str, str]]:
        """Every worker's record (decoded), by role; records with no ``id`` field (expired,
        then re-created by a bare beat) are left out until their next full write."""
        out: list[dict[str, str]] = []
        for role in sorted(r.decode() for r in await self.bb.client.smembers(K.worker_roles())):
            for wid in await self.bb.client.zrange(K.workers_of(role), 0, -1):
                h = await self.bb.client.hgetall(K.worker(wid.decode()))
                if h and b"id" in h:
                    out.append({k.decode(): v.decode() for k, v in h.items()})
        return out
