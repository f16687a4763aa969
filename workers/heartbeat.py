"""Worker heartbeats: who runs, with which role, partitions, lag and counters.

A heartbeat is a hash ``bb:workers:<id>`` that expires if the worker stops beating, plus
the worker's score (last beat, ms) in ``bb:workers:role:<role>``, which gives the number of
live workers of a role without a scan. A worker's liveness for its leases is its beat in
the lease table (:mod:`workers.leases`); this record is for people and ``stats``, so it is
written when what it shows changed and otherwise every ``REFRESH_BEATS`` beats, and lives
``TTL_BEATS`` beats -- an idle worker does not rewrite it every second.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field

from blackboard import Blackboard

__all__ = ["Heartbeat", "WorkerInfo", "list_workers", "live_workers"]

#: An unchanged record is rewritten every this many beats ...
REFRESH_BEATS = 10
#: ... and expires this many beats after its last write (a dead worker leaves the list).
TTL_BEATS = 3 * REFRESH_BEATS


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """One worker as its last heartbeat described it."""

    id: str
    role: str
    pid: int
    host: str
    started_at: int
    beat_at: int
    partitions: tuple[int, ...] = ()
    counters: Mapping[str, int] = field(default_factory=dict)
    #: per partition, when its reader last made progress (Redis clock, ms)
    progress: Mapping[int, int] = field(default_factory=dict)


@dataclass
class Heartbeat:
    bb: Blackboard
    worker_id: str
    role: str
    interval_ms: int

    def __post_init__(self) -> None:
        self.started_at = self.bb.now_ms()
        self._shown: tuple[list[int], dict[str, int]] | None = None
        self._since_write = 0

    async def beat(
        self, partitions: set[int], counters: Mapping[str, int], *, force: bool = True,
        progress: Mapping[int, int] | None = None,
    ) -> bool:
        """Write the record; unless ``force``, only when it changed or is due for a refresh.
        ``progress``: per partition, when its reader last made progress (Redis clock, ms;
        an idle reader's moves every ``block_ms``). -> whether it was written."""
        shown = (sorted(partitions), {**counters, **{f"p{p}": t for p, t in
                                                     (progress or {}).items()}})
        self._since_write += 1
        changed = force or shown != self._shown
        if not changed and self._since_write < REFRESH_BEATS:
            return False
        first = self._shown is None
        self._shown, self._since_write = shown, 0
        now = self.bb.now_ms()  # the Redis clock: workers on other machines compare it
        record: dict[str, str | int] = {"beat_at": now}
        if changed:  # an unchanged record only moves its beat (a small AOF record)
            record |= {
                "id": self.worker_id,
                "role": self.role,
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started_at": self.started_at,
                "partitions": json.dumps(sorted(partitions)),
                "counters": json.dumps(dict(counters)),
                "progress": json.dumps({str(p): t for p, t in (progress or {}).items()}),
            }
        try:
            await self.bb.presence.beat(self.worker_id, self.role, record, now,
                                        self.interval_ms * TTL_BEATS, first)
        except BaseException:
            # Unsure what Redis holds (the record may expire meanwhile): write it whole next.
            self._shown = None
            raise
        return True

    async def stop(self) -> None:
        await self.bb.presence.remove(self.worker_id, self.role)


async def live_workers(bb: Blackboard, role: str, interval_ms: int) -> int:
    """Workers of ``role`` that beat within three intervals (stale ones are pruned)."""
    return await bb.presence.live(role, bb.now_ms() - 3 * interval_ms)


async def list_workers(bb: Blackboard) -> list[WorkerInfo]:
    """Every worker with a live heartbeat, by role."""
    return [
        WorkerInfo(
            id=g["id"],
            role=g["role"],
            pid=int(g["pid"]),
            host=g["host"],
            started_at=int(g["started_at"]),
            beat_at=int(g["beat_at"]),
            partitions=tuple(json.loads(g["partitions"])),
            counters=json.loads(g["counters"]),
            progress={int(p): int(t) for p, t in json.loads(g.get("progress", "{}")).items()},
        )
        for g in await bb.presence.records()
    ]
