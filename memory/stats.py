"""Per-scope statistics (count, tags, time span, strength histogram) of readable scopes.

The reading itself belongs to the substrate, which owns the indexes it counts
(``bb.reads.stats``, :mod:`blackboard.scope_stats`); this module names its records for
memory's callers.
"""

from __future__ import annotations

from blackboard.pool_stats import PoolStats
from blackboard.scope_stats import STRENGTH_EDGES, ScopeStats, StrengthHistogram

__all__ = ["STRENGTH_EDGES", "PoolStats", "ScopeStats", "StrengthHistogram"]
