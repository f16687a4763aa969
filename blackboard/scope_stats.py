"""Per-scope statistics computed from counters and indexes, never from reading entries.

Each scope costs a constant number of Redis commands (a few pipelined round trips for all
scopes together, :meth:`Reads.stats <blackboard.reads.Reads.stats>`), whatever the number
of entries; this module holds the records and the maths, without Redis.

Strength distribution, from the ``evict`` zset alone:
- non-decaying scope: the score *is* the stored strength, so each bucket is one ZCOUNT
  (counted from the pool sample's scores instead when it read the whole zset,
  :func:`counted_from_samples`) and the histogram is exact;
- decaying scope: the score is the time the strength will cross the eviction threshold
  ``T``. For an unreinforced entry (retention ``q = 1 - rate`` per tick) the current
  strength is ``s = T * q ** ((now - evict_at) / tick)``, a monotone map, so bucket edges
  map to evict times and each bucket is again one ZCOUNT. The map is exact for entries
  never reinforced; a reinforced entry decays slower, so it is counted at an upper bound
  of its strength (``exact`` is False for decaying scopes). Entries whose evict time has
  passed (due for pruning) are reported as ``below_threshold``.

It lives in the substrate because both readings depend on what the scripts store as the
``evict`` score (``_lib.lua``); :mod:`memory.stats` re-exports it for agents.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .entry import ScopePolicy
from .pool_stats import PoolSamples, PoolStats

__all__ = [
    "STRENGTH_EDGES",
    "ScopeStats",
    "StrengthHistogram",
    "count_in",
    "counted_from_samples",
    "scope_stats_of",
    "strength_ranges",
]

STRENGTH_EDGES: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


@dataclass(frozen=True, slots=True)
class StrengthHistogram:
    """``counts[i]`` entries have current strength in ``[edges[i], edges[i+1])`` (the last
    bucket includes 1.0). See the module docstring for when it is ``exact``."""

    edges: tuple[float, ...]
    counts: tuple[int, ...]
    below_threshold: int = 0
    exact: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"edges": list(self.edges), "counts": list(self.counts),
                "below_threshold": self.below_threshold, "exact": self.exact}


@dataclass(frozen=True, slots=True)
class ScopeStats:
    """Statistics of one scope. Times are ms since the epoch (None when empty); ``tags``
    are the counter hash (entries expired but not yet swept still count there)."""

    scope: str
    count: int
    tags: dict[str, int]
    oldest_ms: int | None
    newest_ms: int | None
    strength: StrengthHistogram
    #: Pool statistics (evicted_total, per source agent, average strength): see
    #: :mod:`blackboard.pool_stats`; None where they were not read.
    pool: PoolStats | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"scope": self.scope, "count": self.count, "tags": dict(self.tags),
               "oldest_ms": self.oldest_ms, "newest_ms": self.newest_ms,
               "strength": self.strength.to_json()}
        if self.pool is not None:
            out.update(self.pool.to_json())
        return out


def strength_ranges(policy: ScopePolicy, now: int) -> list[tuple[str, str]]:
    """ZCOUNT ranges over evict scores, one per strength bucket (plus, for a decaying
    scope, the range due for pruning)."""
    edges = STRENGTH_EDGES
    out: list[tuple[str, str]] = []
    if policy.decay_rate <= 0:
        for i in range(len(edges) - 1):
            hi = f"({edges[i + 1]!r}" if i < len(edges) - 2 else "+inf"
            out.append((repr(edges[i]) if i else "-inf", hi))
        return out
    thr, q = policy.evict_threshold, 1.0 - policy.decay_rate
    tick_ms = policy.decay_tick * 1000

    def at(s: float) -> float:  # evict time of an unreinforced entry of strength s now
        return now + tick_ms * math.log(thr / s) / math.log(q) if s > thr else now

    for i in range(len(edges) - 1):
        s_lo, s_hi = max(edges[i], thr), edges[i + 1]
        if s_hi <= thr:
            out.append(("1", "0"))  # empty range: those strengths are below the threshold
            continue
        hi_s = f"({at(s_hi)!r}" if i < len(edges) - 2 else "+inf"
        out.append((f"({at(s_lo)!r}", hi_s))
    out.append(("-inf", str(now)))  # due for pruning
    return out


def _bound(b: str) -> tuple[float, bool]:
    """A ZCOUNT bound as (value, exclusive): ``-inf``, ``+inf``, ``(x`` or ``x``."""
    if b.startswith("("):
        return float(b[1:]), True
    return float(b), False


def count_in(scores: Sequence[float], lo: str, hi: str) -> int:
    """``ZCOUNT key lo hi`` over a zset whose every score is in ``scores``: a scope whose
    ``evict`` zset the pool sample read whole is counted here, not by one ZCOUNT per
    range (the scores arrive exact, as Redis prints them with 17 digits; the bounds are
    parsed as Redis parses them)."""
    (a, a_open), (b, b_open) = _bound(lo), _bound(hi)
    return sum(1 for x in scores
               if (a < x if a_open else a <= x) and (x < b if b_open else x <= b))


def counted_from_samples(ranges: Sequence[Sequence[tuple[str, str]]],
                         sampled: PoolSamples) -> dict[int, list[int]]:
    """Scope index -> the count in each of its :func:`strength_ranges`, for each scope
    whose ``evict`` zset the pool sample read whole; the others need a ZCOUNT each."""
    return {i: [count_in([sc for _, sc in sampled.samples[i]], lo, hi) for lo, hi in rs]
            for i, rs in enumerate(ranges) if sampled.complete(i)}


def scope_stats_of(
    scope_id: str, row: Sequence[Any], policy: ScopePolicy, counts: Sequence[int]
) -> ScopeStats:
    """A scope's :class:`ScopeStats` from what :meth:`Reads.stats
    <blackboard.reads.Reads.stats>` read: ``row`` (ZCARD ix, expired count, tags hash,
    oldest and newest ix member with score, cfg hash) and the ZCOUNT of each of
    :func:`strength_ranges`."""
    total, expired, tags, oldest, newest, _cfg = row
    decaying = policy.decay_rate > 0
    hist = StrengthHistogram(
        STRENGTH_EDGES, tuple(counts[: len(STRENGTH_EDGES) - 1]),
        below_threshold=counts[-1] if decaying else 0, exact=not decaying,
    )
    return ScopeStats(
        scope=scope_id, count=int(total) - int(expired),
        tags={k.decode(): int(v) for k, v in sorted(tags.items()) if int(v) > 0},
        oldest_ms=int(oldest[0][1]) if oldest else None,
        newest_ms=int(newest[0][1]) if newest else None, strength=hist,
    )
