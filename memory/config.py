"""Per-scope memory configuration and the default configuration of each level.

A :class:`ScopeConfig` is what the registry stores for a scope; its :meth:`policy` is the
:class:`blackboard.ScopePolicy` the write script enforces (capacity, TTL, decay).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from blackboard import InvalidArgument, ScopePolicy

from .levels import MemoryLevel
from .naming import OwnerKind, parse_scope

__all__ = ["DEFAULT_LEVEL_CONFIGS", "LevelConfig", "ScopeConfig", "default_config"]

HOUR = 3600.0
DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class LevelConfig:
    """Limits of one scope. ``ttl`` and ``decay_tick`` are seconds (``ttl`` None: entries
    never expire); ``max_entries`` 0 is unlimited; ``decay_rate`` is the fraction of
    strength lost per tick by an unreinforced entry (0: no decay); entries whose strength
    falls below ``evict_threshold`` are pruned."""

    ttl: float | None = None
    max_entries: int = 0
    on_full: str = "evict"
    decay_rate: float = 0.0
    decay_tick: float = HOUR
    evict_threshold: float = 0.1
    max_entry_bytes: int = 1 << 20
    feed_maxlen: int = 10_000

    def __post_init__(self) -> None:
        self.policy()  # the substrate's checks are the single definition of valid limits

    # The limits are the substrate ScopePolicy's fields under the same names (its checks
    # validate them); both conversions copy by name.
    def policy(self) -> ScopePolicy:
        return ScopePolicy(**{f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_policy(cls, policy: ScopePolicy) -> LevelConfig:
        """The limits a scope's enforced policy (its cfg hash, the stored truth) stands for."""
        return cls(**{f.name: getattr(policy, f.name) for f in fields(cls)})

    def with_(self, **overrides: Any) -> LevelConfig:
        """A copy with some limits changed (validated)."""
        return replace(self, **overrides)


# Why these numbers: sensory input is only useful for minutes; working memory is a small
# bounded buffer (the weakest are evicted first); short-term memory lives for days and
# fades hourly; long-term memory never expires and fades over weeks unless reinforced.
DEFAULT_LEVEL_CONFIGS: dict[MemoryLevel | None, LevelConfig] = {
    MemoryLevel.SENSORY: LevelConfig(ttl=300.0, max_entries=1_000),
    MemoryLevel.WORKING: LevelConfig(max_entries=200),
    MemoryLevel.STM: LevelConfig(
        ttl=3 * DAY, max_entries=10_000, decay_rate=0.02, decay_tick=HOUR, evict_threshold=0.05
    ),
    MemoryLevel.EPISODIC: LevelConfig(decay_rate=0.01, decay_tick=DAY, evict_threshold=0.05),
    MemoryLevel.SEMANTIC: LevelConfig(decay_rate=0.01, decay_tick=DAY, evict_threshold=0.05),
    MemoryLevel.PROCEDURAL: LevelConfig(decay_rate=0.01, decay_tick=DAY, evict_threshold=0.05),
    # Team root scopes and ``collective`` have no level: shared long-term memory.
    None: LevelConfig(decay_rate=0.01, decay_tick=DAY, evict_threshold=0.05),
}


@dataclass(frozen=True, slots=True)
class ScopeConfig:
    """The registry record of one scope: who owns it, its level and its limits.

    ``created_at`` is ms since the epoch (set by the registry on first registration).
    """

    scope_id: str
    kind: OwnerKind
    owner: str
    level: MemoryLevel | None
    limits: LevelConfig = LevelConfig()
    created_at: int = 0

    def policy(self) -> ScopePolicy:
        return self.limits.policy()

    def to_json(self) -> dict[str, Any]:
        lim = self.limits
        return {
            "scope": self.scope_id,
            "kind": self.kind.value,
            "owner": self.owner,
            "level": self.level.value if self.level else None,
            "ttl": lim.ttl,
            "max_entries": lim.max_entries,
            "on_full": lim.on_full,
            "decay_rate": lim.decay_rate,
            "decay_tick": lim.decay_tick,
            "evict_threshold": lim.evict_threshold,
            "max_entry_bytes": lim.max_entry_bytes,
            "feed_maxlen": lim.feed_maxlen,
        }


def default_config(scope_id: str, **overrides: Any) -> ScopeConfig:
    """The default config of a memory scope (by its parsed level), with overrides applied.

    ``overrides`` are :class:`LevelConfig` fields; unknown names raise InvalidArgument.
    """
    name = parse_scope(scope_id)
    base = DEFAULT_LEVEL_CONFIGS[name.level]
    bad = set(overrides) - set(LevelConfig.__dataclass_fields__)
    if bad:
        raise InvalidArgument(f"unknown scope config fields: {sorted(bad)}")
    return ScopeConfig(scope_id, name.kind, name.owner, name.level, base.with_(**overrides))
