"""The query's vectors for one search: the model's, after embedding the searched entries
still waiting for theirs when they are few, and the first pass's (:mod:`.first_pass`).
Mixed into :class:`~retrieval.engine.SearchEngine` (lock held by the caller)."""

from __future__ import annotations

import logging
import time

from blackboard import tracing

from .backlog import EmbeddingBacklog, Vec
from .completeness import IndexNotes, scope_unembedded
from .embedders.base import Embedder
from .first_pass import query_vectors
from .query import MemoryQuery
from .scope_index import ScopeIndex

__all__ = ["DENSE_RETRY_S", "QueryEmbedding"]

log = logging.getLogger(__name__)

#: After the embedder failed in a search, searches rank without it this long (s), then
#: ask it again.
DENSE_RETRY_S = 5.0


class QueryEmbedding(EmbeddingBacklog):
    """The query's vectors; the engine sets these attributes."""

    first_pass: Embedder | None
    inline_embed: int
    #: When a search's embedder call last failed, and the error's class (None: it worked
    #: since): searches skip the model for DENSE_RETRY_S after.
    _dense_failed: tuple[float, str] | None

    def _query_vector(self, q: MemoryQuery, cats: list[ScopeIndex],
                      notes: IndexNotes) -> Vec | None:
        """The query's vector (lock held), the searched entries still waiting for theirs
        embedded first (within ``inline_embed``); None, with the reason in ``notes``, when
        there is none to compare: no text, no embedder, no searched vector, or the
        embedder failed (then it is not asked again for :data:`DENSE_RETRY_S`: a model
        that fails slowly must not hold every search)."""
        emb = self.embedder
        if emb is None:
            if q.query is not None:
                notes.missed("dense", "dense unavailable: no embedder")
            return None
        failed = self._dense_failed
        if failed is not None:
            ago = time.monotonic() - failed[0]
            if ago < DENSE_RETRY_S:
                if q.query is not None:
                    notes.missed("dense", f"dense failed: {failed[1]} ({ago:.1f} s ago; "
                                          f"asked again {DENSE_RETRY_S:g} s after)")
                return None
        try:
            if self._pending or self._out:
                # counted from the columns first: a backlog is not walked on every search
                if sum(scope_unembedded(c) for c in cats) <= self.inline_embed:
                    with tracing.stage("retrieval.embed_pending"):
                        self._flush_locked(self.inline_embed, cats)
                self._heat(cats)
            # No searched entry has a vector: the query's would meet none, so the model is
            # not loaded for it (a one-shot `blackboard recall` of a fresh memory).
            if q.query is None:
                return None
            if not cats:  # nothing indexed to search: not a failure of the model
                notes.missed("dense", "dense not asked: nothing to search", broken=False)
                return None
            if not any(c.dense is not None and len(c.dense) for c in cats):
                # Not broken: the vectors are on their way (``dense_pending`` says how many),
                # so no fallback route is fused in; BM25 answers until they arrive.
                notes.missed("dense", "dense not asked: no searched entry has a vector yet",
                             broken=False)
                return None
            with tracing.stage("retrieval.embed_query"):
                qvec: Vec = emb.embed([q.query])[0]
        except Exception as exc:
            self._dense_failed = (time.monotonic(), type(exc).__name__)
            log.warning("the embedder failed (%s: %s); searching without it for %g s",
                        type(exc).__name__, exc, DENSE_RETRY_S)
            notes.missed("dense", f"dense failed: {type(exc).__name__}")
            return None
        self._dense_failed = None
        return qvec

    def _first_pass_vector(self, q: MemoryQuery, cats: list[ScopeIndex]
                           ) -> tuple[Vec | None, Vec | None]:
        """The query's first-pass vector (:mod:`retrieval.embedders.static`), for the
        searched entries still without their full one, and its floor vector (None: the
        same); (None, None) when none of them has a first-pass row, or the first pass
        fails (logged: the full vectors and BM25 rank)."""
        fp = self.first_pass
        if (q.query is None or fp is None
                or not any(c.static is not None and len(c.static) for c in cats)):
            return None, None
        try:
            with tracing.stage("retrieval.embed_query_first_pass"):
                return query_vectors(fp, q.query)
        except Exception as exc:
            log.warning("the first-pass embedding failed (%s: %s)", type(exc).__name__, exc)
            return None, None

    def _heat(self, cats: list[ScopeIndex]) -> None:
        # the most recently searched scopes last; a bounded memory of them
        for c in cats:
            self._hot.pop(c.scope, None)
            self._hot[c.scope] = None
        while len(self._hot) > 64:
            del self._hot[next(iter(self._hot))]
