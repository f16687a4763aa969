"""Decay of strength, in closed form (the memory-pool formula), mirrored by ``_lib.lua``.

Per tick: ``s(t+1) = s(t) * (1 - rate / (1 + ln(1 + reinforcements)))``. Ticks are counted
continuously, so at whole ticks the value equals the tick-by-tick formula exactly and in
between it interpolates geometrically. Times are ms; ``tick_ms`` is the tick length in ms.
"""

from __future__ import annotations

import math

__all__ = ["evict_time", "retention", "strength_at", "ticks_until"]


def retention(rate: float, reinforcements: int) -> float:
    """Fraction of strength kept per tick; reinforcement slows decay logarithmically."""
    return 1.0 - rate / (1.0 + math.log1p(reinforcements))


def strength_at(
    strength: float, since_ms: int, now_ms: int, rate: float, reinforcements: int, tick_ms: int
) -> float:
    """Strength at ``now_ms`` of an entry whose strength was ``strength`` at ``since_ms``."""
    if rate <= 0.0 or now_ms <= since_ms:
        return strength
    q = retention(rate, reinforcements)
    if q <= 0.0:
        return 0.0
    return strength * q ** ((now_ms - since_ms) / tick_ms)


def ticks_until(strength: float, threshold: float, rate: float, reinforcements: int) -> float:
    """Ticks (fractional) until ``strength`` decays to ``threshold``; ``inf`` if never."""
    if rate <= 0.0:
        return math.inf
    if strength <= threshold:
        return 0.0
    q = retention(rate, reinforcements)
    if q <= 0.0:
        return 0.0
    return math.log(threshold / strength) / math.log(q)


def evict_time(
    strength: float, since_ms: int, threshold: float, rate: float, reinforcements: int, tick_ms: int
) -> float:
    """The time (ms) the strength crosses ``threshold``, the score kept in the evict zset."""
    return since_ms + ticks_until(strength, threshold, rate, reinforcements) * tick_ms
