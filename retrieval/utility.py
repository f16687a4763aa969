"""Utility from use: how often an entry helped the agents that recalled it.

``AgentMemory.feedback`` counts, per entry, the agents that judged it (``Entry.uses``) and
those that found it helpful (``Entry.helpful``), each agent once. The helpful rate is
smoothed toward an even prior, ``(helpful + prior) / (uses + 2 * prior)``, so an entry
nobody judged sits at 0.5 and one verdict moves it only part of the way. A query with
``utility=w`` (the ``useful`` lens sets 0.5) multiplies each hit's score by
``1 + w * (2 * rate - 1)``: in ``[1 - w, 1 + w]``, 1 for an entry without feedback, so
utility reorders relevant hits and never lifts an irrelevant one. Off by default: ranking
without feedback is unchanged, and the benchmark has no feedback to measure a gain on.
Pure numpy over parallel arrays; :func:`by_utility` maps hits to them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import numpy.typing as npt

from .scoring import ScoredEntry

__all__ = ["PRIOR", "by_utility", "helpful_rate", "utility_factor"]

F64 = npt.NDArray[np.float64]

#: Pseudo-verdicts on each side: how much evidence it takes to move the rate.
PRIOR = 1.0


def helpful_rate(uses: npt.ArrayLike, helpful: npt.ArrayLike, prior: float = PRIOR) -> F64:
    """The smoothed helpful rate in (0, 1); 0.5 without feedback."""
    u = np.maximum(np.asarray(uses, np.float64), 0.0)
    h = np.clip(np.asarray(helpful, np.float64), 0.0, u)
    return (h + prior) / (u + 2.0 * prior)


def utility_factor(uses: npt.ArrayLike, helpful: npt.ArrayLike, weight: float,
                   prior: float = PRIOR) -> F64:
    """The score multiplier ``1 + weight * (2 * rate - 1)``."""
    return 1.0 + weight * (2.0 * helpful_rate(uses, helpful, prior) - 1.0)


def by_utility(hits: list[ScoredEntry], weight: float) -> list[ScoredEntry]:
    """``hits`` rescored by their utility and re-sorted, best first (ties keep their order);
    unchanged for ``weight`` 0."""
    if not hits or weight <= 0.0:
        return hits
    f = utility_factor([h.entry.uses for h in hits], [h.entry.helpful for h in hits], weight)
    scores = np.asarray([h.score for h in hits], np.float64) * f
    order = np.argsort(-scores, kind="stable")
    return [replace(hits[i], score=float(scores[i])) for i in order]
