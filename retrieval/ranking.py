"""Ranking of one search: per-scope candidates (dense and BM25 hits under the hard
pre-filters), then fusion across scopes, final scoring and optional MMR.

Functions that read :class:`ScopeIndex` rows and never mutate them; the caller
(:class:`SearchEngine`) holds the lock that serialises them with mutations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from blackboard import tracing

from .bm25 import BM25Hits
from .fusion import convex, minmax, mmr, rrf
from .query import MemoryQuery
from .scope_index import ScopeIndex
from .scoring import ScoredEntry, ScoringConfig, recency, relevance_floor

__all__ = ["Candidates", "rank", "scope_candidates"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Vec = npt.NDArray[np.float32]


@dataclass(slots=True)
class Candidates:
    """Candidates of one search, concatenated over scopes (parallel arrays of shape ``(n,)``)."""

    cat: list[ScopeIndex]
    rows: I64
    dense: F64  # raw cosine, NaN: no vector / no semantic query
    bm25: F64  # raw BM25, 0: no term match
    #: first-pass cosine of the rows still without a full vector (NaN elsewhere); None: none
    static: F64 | None = None
    #: those rows' cosines in the first pass's floor space, for the relevance floor
    #: (:meth:`~retrieval.embedders.static.StaticEmbedder.embed_with_floor`; ``static``
    #: itself when it has none); None: no first pass
    static_floor: F64 | None = None


def scope_candidates(
    cat: ScopeIndex,
    q: MemoryQuery,
    qvec: Vec | None,
    now: int,
    pool: int,
    cfg: ScoringConfig,
    lexical: bool = True,
    svec: Vec | None = None,
    sfloor: Vec | None = None,
) -> Candidates:
    """At most ``pool`` rows of ``cat`` allowed by ``q``'s filters at ``now`` (ms; all
    allowed rows, pre-ranked, when ``q`` has no text), with their raw scores; without
    ``lexical``, BM25 is not asked (it failed: the dense hits alone, all scoring 0);
    ``svec`` (the query's first-pass vector) adds the first-pass hits of rows without a
    vector; ``sfloor`` (its vector in the floor space) their floor cosines."""
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
    d_ids, d_scores = np.zeros(0, np.int64), np.zeros(0, np.float32)
    if qvec is not None and cat.dense is not None:
        with tracing.stage("retrieval.dense", {"blackboard.scope": cat.scope}):
            dv = cat.dense.search(qvec, pool, allowed)
        d_ids, d_scores = dv.ids, dv.scores
    s_ids, s_scores = np.zeros(0, np.int64), np.zeros(0, np.float32)
    if svec is not None and cat.static is not None and len(cat.static):
        with tracing.stage("retrieval.first_pass", {"blackboard.scope": cat.scope}):
            sv = cat.static.search(svec, pool, allowed)
        s_ids, s_scores = sv.ids, sv.scores
    vec_ids = np.union1d(d_ids, s_ids) if len(s_ids) else d_ids
    # one BM25 pass gives its top pool and the scores of the dense hits
    if lexical:
        with tracing.stage("retrieval.lexical", {"blackboard.scope": cat.scope}):
            b = cat.bm25.search(q.query, pool, allowed, score_ids=vec_ids)
    else:
        b = BM25Hits(np.zeros(0, np.int64), np.zeros(0), np.zeros(len(vec_ids)))
    rows = np.union1d(b.ids, vec_ids)  # sorted: each list's ids are placed by bisection
    bm = np.zeros(len(rows))
    bm[np.searchsorted(rows, b.ids)] = b.scores
    bm[np.searchsorted(rows, vec_ids)] = b.extra
    at_d = np.searchsorted(rows, d_ids)
    dense = np.full(len(rows), np.nan)
    if qvec is not None and cat.dense is not None:
        dense[at_d] = d_scores
        missing = np.isnan(dense) & cat.has_vec.a[rows]
        if missing.any():
            dense[missing] = cat.dense.scores_for(qvec, rows[missing])
    static = None
    if svec is not None and cat.static is not None:
        static = np.full(len(rows), np.nan)
        static[np.searchsorted(rows, s_ids)] = s_scores
        missing = np.isnan(static) & cat.has_static.a[rows]
        if missing.any():
            static[missing] = cat.static.scores_for(svec, rows[missing])
    floor = static  # no floor space of its own: the first pass's cosines are the floor's
    if static is not None and sfloor is not None and cat.static_floor is not None:
        floor = np.full(len(rows), np.nan)
        has = ~np.isnan(static)
        if has.any():
            floor[has] = cat.static_floor.scores_for(sfloor, rows[has])
    return Candidates([cat], rows, dense, bm, static, floor)


def _prior(cat: ScopeIndex, rows: I64, now: int, cfg: ScoringConfig) -> F64:
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
    # Every column over every candidate, part after part; one filter keeps them in step.
    cols = [
        (np.full(len(p.rows), i), p.rows, p.dense, p.bm25,
         *((c if c is not None else np.full(len(p.rows), np.nan))
           for c in (p.static, p.static_floor)),
         p.cat[0].current_strength(p.rows, now), p.cat[0].created_at.view[p.rows],
         p.cat[0].importance.view[p.rows])
        for i, p in enumerate(parts)
    ]
    owner, rows, dense, bm25, static, sfloor, strength, created, importance = (
        c[0] if len(cols) == 1 else np.concatenate(c) for c in zip(*cols, strict=True)
    )
    # a row's first-pass cosine counts only while it has no full one
    static = np.where(np.isnan(dense), static, np.nan)
    if q.query is not None:
        keep = relevance_floor(dense, bm25 > 0, cfg.dense_floor) | (
            np.isnan(dense) & (sfloor >= cfg.first_pass_floor))
        if not keep.all():
            owner, rows, dense, bm25, static, strength, created, importance = (
                a[keep] for a in (owner, rows, dense, bm25, static, strength, created,
                                  importance)
            )
        if not len(rows):
            return []
        fused = _fused(dense, bm25, q, cfg, static)
    else:
        fused = np.zeros(len(rows))
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
    top = order[:k]
    # one conversion per column, not one numpy scalar per field and hit
    picked = zip(owner[top].tolist(), rows[top].tolist(), dense[top].tolist(),
                 bm25[top].tolist(), fused[top].tolist(), strength[top].tolist(),
                 rec[top].tolist(), importance[top].tolist(), score[top].tolist(),
                 (~np.isnan(static[top])).tolist(), strict=True)
    out = []
    text = q.query is not None
    for o, r, d, b, f, st, rc, im, sc, fp in picked:
        cat = parts[o].cat[0]
        entry = cat.entries[r]
        assert entry is not None
        out.append(ScoredEntry(entry, cat.scope, None if math.isnan(d) else d,
                               b if text else None, f, st, rc, im, sc,
                               has_first_pass=fp))
    return out


def _fused(dense: F64, bm25: F64, q: MemoryQuery, cfg: ScoringConfig,
           static: F64 | None = None) -> F64:
    """Relevance in [0, 1]: the BM25 and dense scores (NaN: no vector) fused as ``q`` says
    (reciprocal ranks or a convex combination; BM25 alone when no candidate has a vector).
    ``static``: first-pass cosines of the rows without a full one (NaN elsewhere); the two
    spaces' cosines are not comparable, so each is scaled to [0, 1] over its own rows and
    the two together make the meaning column."""
    has_d = ~np.isnan(dense)
    meaning = minmax(dense, has_d)
    has_m = has_d
    if static is not None and (has_s := ~has_d & ~np.isnan(static)).any():
        meaning = meaning + minmax(static, has_s)
        has_m = has_d | has_s
    if q.fusion == "rrf":
        lists = [bm25] + ([meaning] if has_m.any() else [])
        present = [bm25 > 0] + ([has_m] if has_m.any() else [])
        return rrf(lists, present, cfg.rrf_k) * (cfg.rrf_k + 1) / len(lists)
    if has_m.any():
        alpha = cfg.alpha if q.alpha is None else q.alpha
        return convex(meaning, minmax(bm25), alpha)
    return minmax(bm25)


def _vectors(parts: list[Candidates], owner: I64, rows: I64, dim: int) -> Vec:
    out = np.zeros((len(rows), dim), np.float32)
    for i, p in enumerate(parts):
        cat = p.cat[0]
        m = (owner == i) & (cat.has_vec.a[rows] if len(rows) else False)
        if m.any() and cat.dense is not None:
            out[m] = cat.dense.reconstruct(rows[m])
    return out
