"""Charts over time: a bounded ring of samples the gateway takes itself, and each caller's
series cut from it.

Every ``interval`` seconds (``BLACKBOARD_GATEWAY_CHART_INTERVAL``, default 10) the sampler
reads, on the gateway's service connection: per scope its entries (ZCARD) and the events its
feed ever had (:func:`blackboard.feed_totals.feed_totals`); the buses' lag, pending, inbox
and dead letters (:func:`workers.stats.collect_stats`); the workers' handled-event counters
(heartbeats); and this process's request count. It keeps the last :data:`RING` samples
(an hour at the default interval) and per-scope columns for at most :data:`MAX_SCOPES`
scopes (the rest count in the totals only), so memory stays bounded whatever runs.

What a caller gets: an operator, every series; an agent, only memory size and event rate
summed over the scopes its own Redis user can count right now (checked with one read on
its connection, so an edited token claiming a team gets Redis's refusal, not the team's
figures); the buses, dead letters and workers are the service user's to read.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from blackboard import Blackboard, BlackboardError
from blackboard.errors import LoginRefused
from blackboard.feed_totals import feed_totals
from workers.heartbeat import list_workers
from workers.stats import collect_stats

from ..caller import Caller
from .scopes import visible_scopes

__all__ = ["MAX_SCOPES", "OPERATOR_SERIES", "RING", "Sampler", "sampling", "series_for"]

log = logging.getLogger(__name__)

#: Samples kept (at 10 s: the last hour).
RING = 360
#: Scopes with a column of their own; more are counted in the totals only.
MAX_SCOPES = 2000
#: Series only an operator sees (what the service user reads: buses, DLQs, heartbeats).
OPERATOR_SERIES = ("worker_events", "requests", "lag", "pending", "inbox", "dead_letters")


@dataclass
class Sample:
    t: int  # ms, Redis clock
    counts: array.array[int]  # per scope column: entries
    added: array.array[int]  # per scope column: events ever appended to its feed
    total_entries: int
    total_added: int
    ops: dict[str, int] = field(default_factory=dict)  # OPERATOR_SERIES, cumulative or now


class Sampler:
    """The ring of samples of one gateway process (``app.state.charts``)."""

    def __init__(self, interval: float, requests: Callable[[], float]) -> None:
        self.interval = interval
        self.requests = requests
        self.ring: deque[Sample] = deque(maxlen=RING)
        self.columns: dict[str, int] = {}
        self.error: str | None = None
        self._worker_events: dict[str, int] = {}
        self._events_total = 0
        self._last_t = 0

    def column(self, scope: str) -> int | None:
        i = self.columns.get(scope)
        if i is None and len(self.columns) < MAX_SCOPES:
            i = self.columns[scope] = len(self.columns)
        return i

    async def sample(self, bb: Blackboard) -> Sample:
        scopes = await bb.scope_ids()
        counts = await bb.reads.counts(scopes)
        added = await feed_totals(bb, scopes)
        cols = [self.column(s) for s in scopes]
        width = len(self.columns)
        c_arr, a_arr = array.array("q", [0] * width), array.array("q", [0] * width)
        for i, n, a in zip(cols, counts, added, strict=True):
            if i is not None:
                c_arr[i], a_arr[i] = n, a
        st = await collect_stats(bb)
        tot = st.totals()
        s = Sample(bb.now_ms(), c_arr, a_arr, sum(counts), sum(added), {
            "worker_events": self._count_worker_events(await list_workers(bb), bb.now_ms()),
            "requests": int(self.requests()), "lag": tot["lag"], "pending": tot["pending"],
            "inbox": tot["inbox"], "dead_letters": tot["dlq"]})
        self.ring.append(s)
        return s

    def _count_worker_events(self, workers: list[Any], now: int) -> int:
        """A running total of the events workers handled: what each heartbeat's counter
        grew by since the last sample; a worker started since (or restarted: its counter
        lower) adds all it counts. A worker first seen but older is a baseline."""
        seen: dict[str, int] = {}
        for w in workers:
            n = int(w.counters.get("events", 0))
            before = self._worker_events.get(w.id)
            if before is not None and n >= before:
                self._events_total += n - before
            elif before is not None or (self._last_t and w.started_at >= self._last_t):
                self._events_total += n
            seen[w.id] = n
        self._worker_events, self._last_t = seen, now
        return self._events_total

    async def run(self, bb: Blackboard) -> None:
        """Sample forever (cancelled with the app); a failing read is logged once a streak
        and the ring keeps what it has."""
        while True:
            t0 = time.monotonic()
            try:
                await self.sample(bb)
                if self.error:
                    log.info("chart sampling works again")
                self.error = None
            except (BlackboardError, OSError) as exc:
                if self.error is None:
                    # A refused login of the service connection is the gateway's own error,
                    # said once (naming its URL's setting) where requests meet it: a
                    # second line here for the same cause would not help.
                    level = logging.DEBUG if isinstance(exc, LoginRefused) else logging.WARNING
                    log.log(level, "chart sampling failed: %s", exc)
                self.error = str(exc)
            await asyncio.sleep(max(0.05, self.interval - (time.monotonic() - t0)))


@contextlib.asynccontextmanager
async def sampling(app: Any, interval: float) -> AsyncIterator[None]:
    """Run the sampler on the app's service connection while the app lives (none: no
    samples, and the charts say why)."""

    def requests() -> float:
        total = 0.0
        for metric in app.state.metrics.requests.collect():
            total += sum(s.value for s in metric.samples if s.name.endswith("_total"))
        return total

    sampler = Sampler(interval, requests)
    app.state.charts = sampler
    svc = getattr(app.state, "service", None)
    if svc is None:
        sampler.error = "this gateway has no service connection to sample with"
        yield
        return
    task = asyncio.create_task(sampler.run(svc), name="chart-sampler")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def _rate(prev: int, cur: int, dt_ms: int) -> float:
    # a counter that went down (a flushed server, a restarted worker) is a new baseline
    return round(max(0, cur - prev) * 1000 / dt_ms, 3) if dt_ms > 0 else 0.0


def _sum(arr: array.array[int], cols: list[int]) -> int:
    return sum(arr[i] for i in cols if i < len(arr))


async def _agent_columns(sampler: Sampler, caller: Caller) -> tuple[list[int], int]:
    """The columns of the scopes the caller's own user may count (Redis refuses the
    others: AccessDenied, as any read of them); -> (columns, scopes)."""
    scopes = await visible_scopes(caller)
    await caller.bb.reads.counts(scopes)  # on the caller's connection: Redis checks it
    return [i for s in scopes if (i := sampler.columns.get(s)) is not None], len(scopes)


async def series_for(sampler: Sampler, caller: Caller, minutes: int) -> dict[str, Any]:
    """The caller's series over the last ``minutes``: times (ms), memory size, events/s;
    for an operator also worker events/s, requests/s, lag, pending, inbox, dead letters."""
    samples = list(sampler.ring)
    if samples:
        since = samples[-1].t - minutes * 60_000
        samples = [s for s in samples if s.t >= since]
    cols, nscopes = ([], 0) if caller.operator else await _agent_columns(sampler, caller)

    def entries(s: Sample) -> int:
        return s.total_entries if caller.operator else _sum(s.counts, cols)

    def added(s: Sample) -> int:
        return s.total_added if caller.operator else _sum(s.added, cols)

    pairs = list(itertools.pairwise(samples))
    out: dict[str, Any] = {
        "interval_s": sampler.interval, "kept_s": round(RING * sampler.interval),
        "minutes": minutes, "error": sampler.error,
        "operator": caller.operator, "scopes": None if caller.operator else nscopes,
        "t": [s.t for s in samples],
        "entries": [entries(s) for s in samples],
        # a rate belongs to the later sample of each pair; the first has none
        "events_per_s": [None] + [_rate(added(a), added(b), b.t - a.t) for a, b in pairs],
    }
    if caller.operator:
        for k in ("worker_events", "requests"):
            out[f"{k}_per_s"] = [None] + [_rate(a.ops[k], b.ops[k], b.t - a.t)
                                          for a, b in pairs]
        for k in ("lag", "pending", "inbox", "dead_letters"):
            out[k] = [s.ops[k] for s in samples]
    else:
        out["hidden"] = list(OPERATOR_SERIES)
    return out
