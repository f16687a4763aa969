"""Per-scope statistics (count, tags, time span, strength histogram) of readable scopes.

The reading itself belongs to the substrate, which owns the indexes it counts
(:mod:`blackboard.scope_stats`); this module names it for memory's callers.
"""

from __future__ import annotations

from blackboard import STRENGTH_EDGES, ScopeStats, StrengthHistogram, scope_stats

__all__ = ["STRENGTH_EDGES", "ScopeStats", "StrengthHistogram", "scope_stats"]
