"""The ``/metrics`` gauge of issue 23 item 1: per role and partition, how long ago the
reader that owns it last made progress, from the workers' heartbeat records.

The records are read at most every ``every_s`` seconds (a scrape in between reuses them),
so a Prometheus polling every second costs Redis one read per ``every_s``, not one per
scrape; the ages keep growing between reads (they are computed at scrape time)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily

from blackboard import Blackboard, BlackboardError
from workers.heartbeat import WorkerInfo, list_workers
from workers.stats import progress_rows

__all__ = ["ProgressAges"]

#: How often the heartbeat records are read at most (a heartbeat is 1 s by default).
READ_EVERY_S = 5.0


class ProgressAges:
    """A Prometheus collector of ``blackboard_progress_age_seconds{role, partition}``."""

    def __init__(self, registry: CollectorRegistry, every_s: float = READ_EVERY_S) -> None:
        self.every_s = every_s
        self.reads = 0  # heartbeat reads done (tests: the cache holds between scrapes)
        self._workers: list[WorkerInfo] = []
        self._read_at: float | None = None
        self._bb: Blackboard | None = None
        registry.register(self)

    async def refresh(self, bb: Blackboard | None) -> None:
        """Read the heartbeat records if the last read is ``every_s`` old. Redis failing
        keeps the last ones (their ages go on growing: a stall stays visible)."""
        now = time.monotonic()
        if bb is None or (self._read_at is not None and now - self._read_at < self.every_s):
            return
        self._read_at, self._bb = now, bb
        try:
            self._workers = await list_workers(bb)
            self.reads += 1
        except BlackboardError:
            pass

    def collect(self) -> Iterator[Any]:
        g = GaugeMetricFamily(
            "blackboard_progress_age_seconds",
            "Per role and partition, seconds since its reader last made progress (from the "
            "workers' heartbeats, read at most every few seconds); a growing age with events "
            "waiting is a stall", labels=["role", "partition"])
        if self._bb is not None:
            freshest: dict[tuple[str, str], float] = {}
            for r in progress_rows(self._workers, self._bb.now_ms()):
                key = (str(r["role"]), str(r["partition"]))
                # a partition changing hands: two readers report it, the newer one counts
                freshest[key] = min(freshest.get(key, float("inf")), r["age_ms"] / 1000)
            for (role, part), age in sorted(freshest.items()):
                g.add_metric([role, part], age)
        yield g
