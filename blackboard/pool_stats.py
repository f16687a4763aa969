"""Pool statistics of a scope, as the memory-pool seed has them (issue 27 item 5):
``evicted_total`` (and its reasons), entries per source agent, average strength; entries
per category are the scope's tag counts (:class:`~blackboard.scope_stats.ScopeStats`).

- ``removed``: what maintenance took out of the scope, ever, by reason: ``expired`` (TTL
  sweep, or an upsert finding its target expired), ``decayed`` (pruned below the eviction
  threshold), ``capacity`` (the weakest, past ``max_entries``), ``merged`` (a duplicate
  the dedupe job folded into another entry). Counted by the script that removes the entry,
  in the same script (``remove_entry`` in ``scripts/_lib.lua``), so a count is never lost
  nor made twice. ``forget`` is not an eviction and is not counted.
- ``agents``: live entries per source agent (the entry's ``author``; in an agent's own
  scopes that is the agent, without reading the entries). In team and collective scopes
  the authors are read from ``POOL_SAMPLE`` entries, the weakest (every entry while the
  scope holds no more; fewer when one call covers more than ``POOL_BUDGET / POOL_SAMPLE``
  scopes), so over a larger scope the average strength is a lower bound; entries written by the
  dataflow carry no author and count under ``""`` ("workers" on the surfaces).
- ``avg_strength``: mean current (decayed) strength over the same sample. In team and
  collective scopes each is computed in closed form from the entry's stored strength, time
  and reinforcements (:mod:`blackboard.decay`); in an agent's own scopes, from its score in
  the ``evict`` zset, as the strength histogram reads it (exact for entries never
  reinforced, an upper bound otherwise), so an agent's stats read no entry and cost the same
  few commands at 10 or 10,000 entries.
- ``sampled``: how many entries those two were computed from (the scope's live count unless
  it holds more than its sample).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import keys as K
from .decay import strength_at
from .entry import ScopePolicy, scope_owner

__all__ = ["POOL_SAMPLE", "REMOVAL_REASONS", "PoolSamples", "PoolStats", "pool_of",
           "read_pools", "read_samples", "removed_of", "strength_of_evict_score"]

#: Mirrors REMOVAL_REASONS in scripts/_lib.lua.
REMOVAL_REASONS: tuple[str, ...] = ("expired", "decayed", "capacity", "merged")
#: Entries per scope read for the per-agent counts and the average strength (the newest)...
POOL_SAMPLE = 1000
#: ... and in all, for a call over many scopes (an operator's ``stats`` of every scope):
#: each scope then reads ``POOL_BUDGET // scopes`` entries, at least ``POOL_MIN``.
POOL_BUDGET = 50_000
POOL_MIN = 10
_FIELDS = ("author", "strength", "strength_at", "reinforcements", "expires_at")


@dataclass(frozen=True, slots=True)
class PoolStats:
    """Pool statistics of one scope (see the module docstring)."""

    removed: dict[str, int] = field(default_factory=dict)
    agents: dict[str, int] = field(default_factory=dict)
    avg_strength: float | None = None
    sampled: int = 0

    @property
    def evicted_total(self) -> int:
        return sum(self.removed.values())

    def to_json(self) -> dict[str, Any]:
        return {"evicted_total": self.evicted_total, "removed": dict(self.removed),
                "agents": dict(self.agents), "avg_strength": self.avg_strength,
                "sampled": self.sampled}


def _int(v: Any) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return 0


def removed_of(raw: Mapping[Any, Any] | None) -> dict[str, int]:
    """The ``removed`` counters, every reason present (0 when none), junk read as 0."""
    got = {(k.decode() if isinstance(k, bytes) else str(k)): v for k, v in (raw or {}).items()}
    return {r: max(0, _int(got.get(r))) for r in REMOVAL_REASONS}


def _f(v: Any, default: float) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return default


def pool_of(scope_id: str, count: int, removed: Mapping[Any, Any] | None,
            rows: Sequence[Sequence[Any]], policy: ScopePolicy, now: int, *,
            strengths: Sequence[float] = ()) -> PoolStats:
    """A scope's :class:`PoolStats` from its ``removed`` hash and either the ``_FIELDS`` of
    sampled live entries (``rows``, at most ``POOL_SAMPLE``) or, for an agent's own scope,
    whose author is its owner, sampled ``strengths`` alone."""
    owner = scope_owner(scope_id)
    agents: dict[str, int] = {}
    total = float(sum(strengths))
    n = len(strengths)
    tick_ms = int(policy.decay_tick * 1000)
    for author, s, s_at, reinf, exp in rows:
        if s is None or 0 < _f(exp, 0) <= now:  # gone between the two reads, or expired
            continue
        n += 1
        total += strength_at(_f(s, 1.0), int(_f(s_at, 0)), now, policy.decay_rate,
                             _int(reinf), tick_ms)
        if owner is None:
            a = author.decode() if isinstance(author, bytes) else (author or "")
            agents[a] = agents.get(a, 0) + 1
    if owner is not None and count:
        agents = {owner: count}  # every entry of an agent's scope is the agent's
    return PoolStats(removed=removed_of(removed), agents=dict(sorted(agents.items())),
                     avg_strength=round(total / n, 4) if n else None, sampled=n)


def strength_of_evict_score(score: float, policy: ScopePolicy, now: int) -> float:
    """An entry's current strength from its ``evict`` score, as the strength histogram
    reads it (:mod:`blackboard.scope_stats`): the score itself in a non-decaying scope;
    otherwise the time the strength crosses the threshold ``T``, so ``s = T * q ** ((now -
    evict_at) / tick)``, exact for an entry never reinforced. A reinforced entry decays
    more slowly than ``q`` says, so its crossing is later and this reads it too strong: at
    most 1, the cap of every write and reinforcement (``check_importance``)."""
    if policy.decay_rate <= 0:
        return float(score)
    q = 1.0 - policy.decay_rate
    tick_ms = max(policy.decay_tick * 1000, 1e-9)
    return min(1.0, float(policy.evict_threshold * q ** ((now - score) / tick_ms)))


def _pairs(reply: Any) -> list[tuple[Any, float]]:
    """A WITHSCORES reply as (member, score) pairs, whatever the protocol."""
    if not reply:
        return []
    if isinstance(reply[0], list | tuple):
        return [(m, float(sc)) for m, sc in reply]
    return [(reply[i], float(reply[i + 1])) for i in range(0, len(reply), 2)]


@dataclass(frozen=True, slots=True)
class PoolSamples:
    """What :func:`read_samples` read: each scope's ``removed`` hash and the (member,
    score) pairs of its sampled ``evict`` members, ``per`` at most each."""

    per: int
    removed: list[Any]
    samples: list[list[tuple[Any, float]]]

    def complete(self, i: int) -> bool:
        """Whether scope ``i``'s sample is its whole ``evict`` zset (fewer than asked)."""
        return len(self.samples[i]) < self.per


async def read_samples(client: Any, keys: Sequence[K.ScopeKeys]) -> PoolSamples:
    """Each scope's ``removed`` hash and the first ``per`` members of its ``evict`` zset
    (the weakest; every member while the scope holds no more; their scores give the
    strengths), in one round trip."""
    per = min(POOL_SAMPLE, max(POOL_MIN, POOL_BUDGET // max(1, len(keys))))
    async with client.pipeline(transaction=False) as pipe:
        for k in keys:
            pipe.hgetall(k.removed)
            # ZRANGE, not ZRANDMEMBER: an agent's ACL user may run only the former
            pipe.zrange(k.evict, 0, per - 1, withscores=True)
        first = await pipe.execute()
    return PoolSamples(per, first[0::2], [_pairs(got) for got in first[1::2]])


async def read_pools(client: Any, keys: Sequence[K.ScopeKeys], counts: Sequence[int],
                     policies: Sequence[ScopePolicy], now: int,
                     sampled: PoolSamples) -> list[PoolStats]:
    """Each scope's :class:`PoolStats` from its :func:`read_samples`, a constant number of
    commands per scope whatever its size: for scopes without an owner (team, collective)
    only, the sampled entries' authors, in one more round trip."""
    ownerless = [scope_owner(k.scope_id) is None for k in keys]
    async with client.pipeline(transaction=False) as pipe:
        for k, some, read in zip(keys, sampled.samples, ownerless, strict=True):
            for member, _ in some if read else ():
                pipe.hmget(k.entry(member.decode() if isinstance(member, bytes)
                                   else member), *_FIELDS)
        rows = iter(await pipe.execute() if any(ownerless) else ())
    out = []
    for k, c, r, some, read, p in zip(keys, counts, sampled.removed, sampled.samples,
                                       ownerless, policies, strict=True):
        if read:  # the authors: read from the entries themselves
            out.append(pool_of(k.scope_id, c, r, [next(rows) for _ in some], p, now))
            continue
        strengths = [strength_of_evict_score(sc, p, now) for _, sc in some]
        out.append(pool_of(k.scope_id, c, r, [], p, now, strengths=strengths))
    return out
