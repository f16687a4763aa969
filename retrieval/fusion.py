"""Score fusion and diversification: min-max, convex combination, RRF, MMR (pure numpy).

Arrays are 1-d over one candidate set, same order throughout.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["RRF_K", "convex", "minmax", "mmr", "rrf"]

F64 = npt.NDArray[np.float64]
RRF_K = 60


def minmax(x: npt.ArrayLike, present: npt.NDArray[np.bool_] | None = None) -> F64:
    """Scale to [0, 1] over the ``present`` entries (all by default); absent entries get 0.

    A constant (non-empty) set maps to 1: every candidate is equally the best.
    """
    a = np.asarray(x, dtype=np.float64)
    out = np.zeros_like(a)
    m = np.ones(len(a), bool) if present is None else np.asarray(present, bool)
    if not m.any():
        return out
    lo, hi = a[m].min(), a[m].max()
    out[m] = 1.0 if hi == lo else (a[m] - lo) / (hi - lo)
    return out


def convex(dense: npt.ArrayLike, bm25: npt.ArrayLike, alpha: float) -> F64:
    """``alpha * dense + (1 - alpha) * bm25`` (inputs already normalised)."""
    return alpha * np.asarray(dense, np.float64) + (1.0 - alpha) * np.asarray(bm25, np.float64)


def rrf(
    scores: Sequence[npt.ArrayLike],
    present: Sequence[npt.NDArray[np.bool_]] | None = None,
    k: int = RRF_K,
) -> F64:
    """Reciprocal-rank fusion: ``sum over lists of 1 / (k + rank)``, rank from 1 by
    descending score within each list (ties broken by position); a candidate absent from
    a list gets nothing from it."""
    n = len(np.asarray(scores[0])) if scores else 0
    out = np.zeros(n)
    for i, s in enumerate(scores):
        a = np.asarray(s, np.float64)
        m = np.ones(n, bool) if present is None else np.asarray(present[i], bool)
        idx = np.flatnonzero(m)
        order = idx[np.argsort(-a[idx], kind="stable")]
        out[order] += 1.0 / (k + np.arange(1, len(order) + 1))
    return out


def mmr(
    relevance: npt.ArrayLike, vectors: npt.ArrayLike, lam: float, k: int
) -> npt.NDArray[np.int64]:
    """Maximal marginal relevance: greedily pick the candidate maximising
    ``lam * relevance - (1 - lam) * max cosine to those already picked``.

    ``vectors`` are unit rows ``(n, dim)``; returns up to ``k`` indices in pick order.
    """
    rel = np.asarray(relevance, np.float64)
    v = np.asarray(vectors, np.float64)
    n = len(rel)
    k = min(k, n)
    if k <= 0:
        return np.zeros(0, np.int64)
    sim = v @ v.T
    picked: list[int] = []
    max_sim = np.full(n, -np.inf)
    free = np.ones(n, bool)
    for _ in range(k):
        penalty = np.where(np.isfinite(max_sim), max_sim, 0.0)
        gain = np.where(free, lam * rel - (1.0 - lam) * penalty, -np.inf)
        j = int(np.argmax(gain))
        picked.append(j)
        free[j] = False
        max_sim = np.maximum(max_sim, sim[j])
    return np.asarray(picked, np.int64)
