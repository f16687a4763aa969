"""Ranking of one search: per-scope candidates (dense and BM25 hits under the hard
pre-filters), then fusion across scopes, final scoring and optional MMR.

Functions that read :class:`ScopeCatalog` rows and never mutate them; the caller
(:class:`SearchEngine`) holds the lock that serialises them with mutations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .catalog import ScopeCatalog
from .fusion import convex, minmax, mmr, rrf
from .query import MemoryQuery
from .scoring import ScoredEntry, ScoringConfig, recency, relevance_floor

__all__ = ["Candidates", "rank", "scope_candidates"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Vec = npt.NDArray[np.float32]


@dataclass(slots=True)
class Candidates:
    """Candidates of one search, concatenated over scopes (parallel arrays of shape ``(n,)``)."""

    cat: list[ScopeCatalog]
    rows: I64
    dense: F64  # raw cosine, NaN: no vector / no semantic query
    bm25: F64  # raw BM25, 0: no term match


def scope_candidates(
    cat: ScopeCatalog,
    q: MemoryQuery,
    qvec: Vec | None,
    now: int,
    pool: int,
    cfg: ScoringConfig,
) -> Candidates:
    """At most ``pool`` rows of ``cat`` allowed by ``q``'s filters at ``now`` (ms; all
    allowed rows, pre-ranked, when ``q`` has no text), with their raw scores."""
    allowed = cat.allowed_rows(q, now)
    empty = Candidates([cat], np.zeros(0, np.int64), np.zeros(0), np.zeros(0))
    if allowed is not None and not len(allowed):
        return empty
    if q.query is None:
        # no text: every allowed row is a candidate, pre-ranked by the non-text terms
        rows = allowed if allowed is not None else np.flatnonzero(cat.alive.view)
        if len(rows) > pool:
            pre = _prior(cat, rows, now, cfg)
            rows = rows[np.argpartition(-pre, pool - 1)[:pool]]
        n = len(rows)
        return Candidates([cat], rows.astype(np.int64), np.full(n, np.nan), np.zeros(n))
    dense_map: dict[int, float] = {}
    if qvec is not None and cat.dense is not None:
        dv = cat.dense.search(qvec, pool, allowed)
        dense_map = dict(zip(dv.ids.tolist(), dv.scores.tolist(), strict=True))
    d_ids = np.fromiter(dense_map, np.int64, len(dense_map))
    # one BM25 pass gives its top pool and the scores of the dense hits
    b = cat.bm25.search(q.query, pool, allowed, score_ids=d_ids)
    rows = np.union1d(b.ids, d_ids)
    b_map = dict(zip(b.ids.tolist(), b.scores.tolist(), strict=True))
    b_map.update(zip(d_ids.tolist(), b.extra.tolist(), strict=True))
    bm = np.fromiter((b_map[r] for r in rows.tolist()), np.float64, len(rows))
    dense = np.full(len(rows), np.nan)
    if qvec is not None and cat.dense is not None:
        for i, r in enumerate(rows.tolist()):
            if r in dense_map:
                dense[i] = dense_map[r]
        missing = np.isnan(dense) & cat.has_vec.a[rows]
        if missing.any():
            dense[missing] = cat.dense.scores_for(qvec, rows[missing])
    return Candidates([cat], rows, dense, bm)


def _prior(cat: ScopeCatalog, rows: I64, now: int, cfg: ScoringConfig) -> F64:
    return (
        cfg.w_strength * np.minimum(cat.current_strength(rows, now), 1.0)
        + cfg.w_recency * recency(cat.created_at.view[rows], now, cfg.recency_half_life_ms)
        + cfg.w_importance * cat.importance.view[rows]
    )


def rank(
    parts: list[Candidates],
    q: MemoryQuery,
    qvec: Vec | None,
    now: int,
    cfg: ScoringConfig,
    dim: int,
) -> list[ScoredEntry]:
    """The best ``q.max_results`` of the non-empty ``parts``, best first; ``dim`` is the
    embedder's vector length (read only for MMR)."""
    owner = np.concatenate([np.full(len(p.rows), i) for i, p in enumerate(parts)])
    rows = np.concatenate([p.rows for p in parts])
    dense = np.concatenate([p.dense for p in parts])
    bm25 = np.concatenate([p.bm25 for p in parts])
    if q.query is not None:
        keep = relevance_floor(dense, bm25 > 0, cfg.dense_floor)
        owner, rows, dense, bm25 = owner[keep], rows[keep], dense[keep], bm25[keep]
        if not len(rows):
            return []
        has_d = ~np.isnan(dense)
        if q.fusion == "rrf":
            lists = [bm25] + ([dense] if has_d.any() else [])
            present = [bm25 > 0] + ([has_d] if has_d.any() else [])
            fused = rrf(lists, present, cfg.rrf_k) * (cfg.rrf_k + 1) / len(lists)
        elif has_d.any():
            alpha = cfg.alpha if q.alpha is None else q.alpha
            fused = convex(minmax(dense, has_d), minmax(bm25), alpha)
        else:
            fused = minmax(bm25)
    else:
        fused = np.zeros(len(rows))
    strength = np.zeros(len(rows))
    created = np.zeros(len(rows))
    importance = np.zeros(len(rows))
    for i, p in enumerate(parts):
        m = owner == i
        cat = p.cat[0]
        strength[m] = cat.current_strength(rows[m], now)
        created[m] = cat.created_at.view[rows[m]]
        importance[m] = cat.importance.view[rows[m]]
    rec = recency(created, now, cfg.recency_half_life_ms)
    score = (
        cfg.w_relevance * fused
        + cfg.w_strength * np.minimum(strength, 1.0)
        + cfg.w_recency * rec
        + cfg.w_importance * importance
    )
    order = np.lexsort((-created, -score))
    k = q.max_results
    if q.mmr is not None and qvec is not None:
        head = order[: max(k * 4, k)]
        vecs = _vectors(parts, owner[head], rows[head], dim)
        order = head[mmr(score[head], vecs, q.mmr, k)]
    out = []
    for j in order[:k].tolist():
        cat = parts[owner[j]].cat[0]
        entry = cat.entries[rows[j]]
        assert entry is not None
        out.append(
            ScoredEntry(
                entry=entry,
                scope=cat.scope,
                dense=None if np.isnan(dense[j]) else float(dense[j]),
                bm25=None if q.query is None else float(bm25[j]),
                fused=float(fused[j]),
                strength=float(strength[j]),
                recency=float(rec[j]),
                importance=float(importance[j]),
                score=float(score[j]),
            )
        )
    return out


def _vectors(parts: list[Candidates], owner: I64, rows: I64, dim: int) -> Vec:
    out = np.zeros((len(rows), dim), np.float32)
    for i, p in enumerate(parts):
        cat = p.cat[0]
        m = (owner == i) & (cat.has_vec.a[rows] if len(rows) else False)
        if m.any() and cat.dense is not None:
            out[m] = cat.dense.reconstruct(rows[m])
    return out
