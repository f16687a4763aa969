"""The ranking of one search over scope indexes: candidates from each scope, a round of
feedback from the first hits (``prf_docs``), and the second stage (:func:`rerank`) when it
can change anything. Called by :class:`retrieval.engine.SearchEngine` under its lock;
nothing here changes an index."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from blackboard import Entry, tracing

from .completeness import IndexNotes
from .prf import entities, expansion_terms, rocchio
from .query import MemoryQuery
from .ranking import Candidates, rank, scope_candidates
from .rerank import rerank
from .scope_index import ScopeIndex
from .scoring import ScoredEntry, ScoringConfig
from .text import entry_text
from .timeline import resolve_periods

__all__ = ["SearchRound", "degraded", "ranked"]

log = logging.getLogger(__name__)

Vec = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class SearchRound:
    """One search: the query ``q`` and its vector, the scope indexes searched, the time
    decay and recency run on (``now`` ms), the engine's ``config``, the vector ``dim`` and
    the text each entry is indexed by; ``lexical`` off: BM25 is not asked (it failed)."""

    q: MemoryQuery
    cats: list[ScopeIndex]
    qvec: Vec | None
    now: int
    config: ScoringConfig
    dim: int
    text_fn: Callable[[Entry], str]
    lexical: bool = True
    #: the query's first-pass vector (:mod:`retrieval.embedders.static`), for the rows
    #: still without their full one
    svec: Vec | None = None
    #: the query's vector in the first pass's floor space (None: ``svec`` is used)
    sfloor: Vec | None = None


def ranked(r: SearchRound, k: int) -> list[ScoredEntry]:
    """The best ``k`` of the round's candidates, after a round of feedback and with the
    second stage when it can change anything."""
    cfg, q = r.config, r.q
    pool = max(cfg.candidates, cfg.candidate_factor * q.max_results)
    parts = _candidates(r, q, r.qvec, pool)
    if not parts:
        return []
    head = q.model_copy(update={"max_results": max(k, cfg.rerank_depth)})
    qvec = r.qvec
    if cfg.prf_docs and q.query is not None:
        with tracing.stage("retrieval.feedback"):
            first = rank(parts, head, qvec, r.now, cfg, r.dim)[: cfg.prf_docs]
            q2, qvec = _feedback(r, first)
        head = head.model_copy(update={"query": q2})
        parts = _candidates(r, head, qvec, pool)
        if not parts:
            return []
    anchor = max(c.latest_event for c in r.cats)
    if not _second_stage(r, anchor):
        with tracing.stage("retrieval.fusion"):
            return rank(parts, head.model_copy(update={"max_results": k}), qvec, r.now, cfg,
                        r.dim)
    with tracing.stage("retrieval.fusion"):
        fused = rank(parts, head, qvec, r.now, cfg, r.dim)
    with tracing.stage("retrieval.rerank"):
        return rerank(fused, q.query, cfg, anchor, k)


def degraded(r: SearchRound, k: int, first: Exception, notes: IndexNotes) -> list[ScoredEntry]:
    """The round ranked without the index that broke it (``first``: what the full ranking
    raised): without dense, else without BM25; the one whose absence lets the ranking
    through is noted failed (with the error's class), the other answered. Both broken, or
    the only one: no hits, each noted. Logged with the traceback: a failure here may be a
    bug, never a reason to fail the recall."""
    log.warning("a search failed (%s: %s); ranking without the index that broke",
                type(first).__name__, first, exc_info=first)
    if r.q.query is None:
        notes.missed("ranking", f"ranking failed: {type(first).__name__}")
        return []
    errors: dict[str, Exception] = {}
    meaning = r.qvec is not None or r.svec is not None
    if meaning:
        no_meaning = replace(r, qvec=None, svec=None, sfloor=None)
        for left_out, alt, other in (("dense", no_meaning, "bm25"),
                                     ("bm25", replace(r, lexical=False), "dense")):
            try:
                out = ranked(alt, k)
            except Exception as exc:
                errors[other] = exc  # the one left asking broke this ranking
                continue
            notes.missed(left_out, f"{left_out} failed: "
                                   f"{type(errors.get(left_out, first)).__name__}")
            notes.ok(other)
            return out
    for index in ("dense", "bm25") if meaning else ("bm25",):
        notes.missed(index, f"{index} failed: {type(errors.get(index, first)).__name__}")
    return []


def _candidates(r: SearchRound, q: MemoryQuery, qvec: Vec | None, pool: int) -> list[Candidates]:
    """The candidates of each scope index that has any (:func:`scope_candidates`)."""
    with tracing.stage("retrieval.candidates", {"retrieval.scopes": len(r.cats)}):
        parts = [scope_candidates(c, q, qvec, r.now, pool, r.config, r.lexical, r.svec,
                                  r.sfloor)
                 for c in r.cats]
    return [p for p in parts if len(p.rows)]


def _second_stage(r: SearchRound, anchor: int) -> bool:
    """Whether :func:`rerank` can change anything: conversational entries for the speaker
    and neighbour boosts, or a period named in the query for the time boost."""
    cfg, query = r.config, r.q.query
    if query is None:
        return False
    if (cfg.speaker_boost or cfg.neighbour_weight) and any(c.n_said for c in r.cats):
        return True
    return bool(cfg.time_boost) and bool(resolve_periods(query, anchor))


def _feedback(r: SearchRound, first: list[ScoredEntry]) -> tuple[str, Vec | None]:
    """The query text and vector refined by the ``first`` hits (:mod:`retrieval.prf`)."""
    cfg, qvec = r.config, r.qvec
    assert r.q.query is not None
    if qvec is not None and first:
        qvec = _toward_hits(r, qvec, first)
    text = r.q.query
    if cfg.hop_entities and first:
        text = " ".join([text, *_hop_names(text, first, cfg.hop_entities)])
    if not cfg.prf_terms or not first or not r.lexical:
        return text, qvec
    return " ".join([text, *_expansion(r, r.q.query, first)]), qvec


def _index_of(r: SearchRound, scope: str) -> ScopeIndex:
    return next(c for c in r.cats if c.scope == scope)


def _toward_hits(r: SearchRound, qvec: Vec, first: list[ScoredEntry]) -> Vec:
    """``qvec`` moved toward the vectors of the ``first`` hits that have one (Rocchio)."""
    vecs = []
    for h in first:
        cat = _index_of(r, h.scope)
        row = cat.row_of.get(h.entry.id)
        if row is not None and cat.dense is not None and cat.has_vec.a[row]:
            vecs.append(cat.dense.reconstruct(np.asarray([row], np.int64))[0])
    return rocchio(qvec, np.stack(vecs), r.config.prf_dense) if vecs else qvec


def _expansion(r: SearchRound, query: str, first: list[ScoredEntry]) -> list[str]:
    """Terms of the ``first`` hits to add to ``query``, weighed by the IDF of the best
    hit's scope."""
    bm = _index_of(r, first[0].scope).bm25
    an = bm.analyzer
    n = max(len(bm), 1)
    return expansion_terms(
        an.terms([r.text_fn(h.entry) for h in first]), an.query_terms(query),
        r.config.prf_terms,
        lambda t: float(np.log(1 + n / (1 + bm.document_frequency(t)))),
    )


def _hop_names(text: str, first: list[ScoredEntry], limit: int) -> list[str]:
    """Names the ``first`` hits mention and ``text`` does not (speakers left out): what a
    second hop searches for."""
    said = [_said(h.entry) for h in first]
    return entities([t for t, _ in said], text, [s for _, s in said if s], limit)


def _said(e: Entry) -> tuple[str, str | None]:
    """A message's own text and speaker (not its context); other entries: indexed text."""
    v = e.value
    if isinstance(v, dict) and v.get("kind") == "message":
        sp = v.get("speaker")
        return str(v.get("text", "")), sp if isinstance(sp, str) else None
    return entry_text(e), None

