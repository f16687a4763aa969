"""The in-process search engine: per-scope dense + BM25 indexes, kept in step with the
entries, and searched under one lock (candidates and ranking: :mod:`retrieval.ranking`)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from blackboard import Entry, ScopePolicy, tracing

from .backlog import Pending, Vec
from .bm25 import BM25Index
from .bm25_variants import BM25Params
from .completeness import IndexNotes, mark_vectors, unembedded
from .dense import DenseIndex
from .embedders.base import Embedder, default_embedder
from .first_pass import add_rows, first_pass_indexes, rough_fits
from .pipeline import SearchRound, degraded, ranked
from .query import MemoryQuery
from .query_embedding import QueryEmbedding
from .scope_index import ScopeDecay, ScopeIndex
from .scoring import ScoredEntry, ScoringConfig
from .text import entry_text, event_time_ms

__all__ = ["EngineStats", "SearchEngine"]

log = logging.getLogger(__name__)

@dataclass(frozen=True, slots=True)
class EngineStats:
    """Counters: ``embed_calls`` embedder invocations, ``embedded_texts`` texts sent to it,
    ``pending_embeddings`` entries waiting for a vector, ``adopted_vectors`` waiting
    entries given a vector stored meanwhile by another process (:meth:`SearchEngine.adopt`)
    instead of a model call."""

    scopes: int
    entries: int
    embed_calls: int
    embedded_texts: int
    pending_embeddings: int
    adopted_vectors: int = 0


class SearchEngine(QueryEmbedding):
    """Hybrid recall over entries of many scopes, in memory.

    ``embedder="default"`` uses :func:`default_embedder` (MiniLM if installed); ``None``
    ranks by BM25 alone. ``text_fn`` gives the indexed text of an entry. Thread-safe (one
    lock: mutations and searches are serialised; the model runs outside it when entries
    are embedded in the background, :meth:`take_pending`; the queue's methods are
    :class:`~retrieval.backlog.EmbeddingBacklog`'s).

    Entries added without a usable vector wait in a queue, embedded ``embed_batch`` at a
    time (by :meth:`flush_embeddings`, or a follower's background task). A search first
    embeds those of its scopes still waiting itself when they are at most
    ``inline_embed``, so what was just written is found by meaning too. More waiting means
    the model is behind the writes: they rank by BM25, the filters and their first-pass
    vector until their batch is done, and a search's cost stays bounded instead of growing
    with the backlog.

    ``first_pass`` (``"auto"``: the embedder's own ``first_pass()``, if it has one, e.g.
    MiniLM's static token vectors, :mod:`retrieval.embedders.static`; None: off) gives an
    entry waiting for its vector a cheap one the moment it is indexed, in its own index
    (its cosines are never compared with the model's) and dropped when the full vector
    arrives: what was just written ranks by meaning too, roughly, from the start.
    """

    def __init__(
        self,
        embedder: Embedder | Literal["default"] | None = "default",
        config: ScoringConfig | None = None,
        *,
        bm25_variant: str = "lucene",
        bm25_params: BM25Params | None = None,
        ivf_threshold: int = 200_000,
        text_fn: Callable[[Entry], str] = entry_text,
        embed_batch: int = 256,
        inline_embed: int = 64,
        first_pass: Embedder | Literal["auto"] | None = "auto",
    ) -> None:
        self.embedder: Embedder | None = (
            default_embedder() if isinstance(embedder, str) else embedder
        )
        if first_pass == "auto":
            make = getattr(self.embedder, "first_pass", None)
            first_pass = make() if callable(make) else None
        self.first_pass: Embedder | None = first_pass if self.embedder is not None else None
        self.config = config or ScoringConfig()
        self.bm25_variant = bm25_variant
        self.bm25_params = bm25_params
        self.ivf_threshold = ivf_threshold
        self.text_fn = text_fn
        self.embed_batch = embed_batch
        self.inline_embed = inline_embed
        self._lock = threading.RLock()
        self._scopes: dict[str, ScopeIndex] = {}
        self._scope_of: dict[str, str] = {}  # entry id -> scope
        self._pending: Pending = []
        #: Scopes searched lately, newest last: their entries are embedded first (what is
        #: being searched gains meaning soonest while the model is behind the writes).
        self._hot: dict[str, None] = {}
        self._out = []  # batches taken, being embedded outside the lock
        self._dense_failed = None  # QueryEmbedding's: the embedder's last failure
        self._counts_lock = threading.Lock()  # the embed counters, kept from any thread
        self._embed_calls = 0
        self._embedded_texts = 0
        self._adopted = 0
        #: Called (under the engine lock, on whichever thread embedded) with each batch of
        #: ``(entry, vector)`` the engine embedded, so a follower can store the vectors back
        #: in Redis and never compute them again. Must be quick and thread-safe.
        self.on_embedded: Callable[[list[tuple[Entry, Vec]]], None] | None = None

    # -- bookkeeping -----------------------------------------------------------

    def _scope_index(self, scope: str) -> ScopeIndex:
        cat = self._scopes.get(scope)
        if cat is None:
            emb = self.embedder
            dense = (
                DenseIndex(emb.dim, ivf_threshold=self.ivf_threshold, embedder=emb.name)
                if emb is not None
                else None
            )
            bm25 = BM25Index(variant=self.bm25_variant, params=self.bm25_params)
            static, floor = first_pass_indexes(self.first_pass)
            cat = self._scopes[scope] = ScopeIndex(scope, dense, bm25, static, floor)
        return cat

    def set_policy(self, scope: str, policy: ScopePolicy) -> None:
        """Use ``policy``'s decay rate and tick for the current strength of ``scope``."""
        with self._lock:
            self._scope_index(scope).decay = ScopeDecay(
                policy.decay_rate, int(policy.decay_tick * 1000)
            )

    def scopes(self) -> list[str]:
        with self._lock:
            return sorted(self._scopes)

    def decay(self, scopes: Iterable[str]) -> dict[str, ScopeDecay]:
        """The decay parameters of those of ``scopes`` indexed here."""
        with self._lock:
            return {s: c.decay for s in scopes if (c := self._scopes.get(s)) is not None}

    def has_copies(self, scopes: Iterable[str]) -> bool:
        """Whether any of ``scopes`` holds a copy of another entry (``origin_id``)."""
        with self._lock:
            return any(c.n_copies for s in scopes if (c := self._scopes.get(s)) is not None)

    def newest_on_slot(self, scope: str, slot: str) -> Entry | None:
        """The newest raw statement on ``slot`` in ``scope`` (:mod:`retrieval.updates`)."""
        with self._lock:
            cat = self._scopes.get(scope)
            rows = cat.slot_rows.get(slot) if cat is not None else None
            found = [e for r in rows or () if (e := cat.entries[r]) is not None]  # type: ignore[union-attr]
            return max(found, key=event_time_ms, default=None)

    def get(self, entry_id: str) -> Entry | None:
        with self._lock:
            scope = self._scope_of.get(entry_id)
            if scope is None:
                return None
            cat = self._scopes[scope]
            return cat.entries[cat.row_of[entry_id]]

    def stats(self) -> EngineStats:
        with self._lock:
            return EngineStats(
                len(self._scopes),
                len(self._scope_of),
                self._embed_calls,
                self._embedded_texts,
                len(self._pending) + sum(len(o.items) for o in self._out),
                self._adopted,
            )

    # -- mutation ------------------------------------------------------------

    def add(self, entries: Iterable[Entry], *, embed_now: bool = True) -> None:
        """Index ``entries`` (an id already indexed is replaced).

        A stored ``embedding`` is reused when ``embedder`` is this engine's embedder name
        and its size fits; any other vector is ignored and the entry queued for embedding,
        done now (in batches) unless ``embed_now`` is false (then at the next search).
        """
        emb = self.embedder
        with self._lock:
            by_scope: dict[str, list[Entry]] = {}
            for e in entries:
                by_scope.setdefault(e.scope, []).append(e)
            for scope, batch in by_scope.items():
                kept = self._kept_vectors(batch) if emb is not None else {}
                self._remove_locked([e.id for e in batch])
                cat = self._scope_index(scope)
                rows, texts, vec_rows, vecs = [], [], [], []
                waiting: list[tuple[int, str]] = []
                for e in batch:
                    row = cat.append(e)
                    self._scope_of[e.id] = scope
                    text = self.text_fn(e)
                    rows.append(row)
                    texts.append(text)
                    if emb is None:
                        continue
                    if e.id in kept:
                        vec_rows.append(row)
                        vecs.append(kept[e.id])
                    elif (
                        e.embedding is not None
                        and e.embedder == emb.name
                        and len(e.embedding) == emb.dim * 4
                    ):
                        vec_rows.append(row)
                        vecs.append(np.frombuffer(e.embedding, dtype=np.float32))
                    else:
                        self._pending.append((cat, row, text))
                        if rough_fits(e, self.config.long_message_chars):
                            waiting.append((row, text))
                cat.bm25.add(rows, texts)
                self._first_pass_locked(cat, waiting)
                if vec_rows and cat.dense is not None:
                    cat.dense.add(np.asarray(vec_rows, np.int64), np.stack(vecs))
                    cat.has_vec.a[vec_rows] = True
            if embed_now:
                self._flush_locked()
            for cat in self._scopes.values():
                if cat.dense is not None and cat.dense.needs_rebuild:
                    cat.dense.rebuild()

    def _first_pass_locked(self, cat: ScopeIndex, waiting: list[tuple[int, str]]) -> None:
        """First-pass rows for ``waiting`` rows of ``cat`` (row, text), so an entry ranks
        by rough meaning as soon as it is indexed. A first pass that cannot load is logged
        once and turned off."""
        fp = self.first_pass
        if fp is None:
            return
        try:
            add_rows(fp, cat, waiting)
        except Exception as exc:  # e.g. a model file without the table: the model's alone
            log.warning("first-pass vectors off: %s", exc)
            self.first_pass = None

    def _kept_vectors(self, batch: list[Entry]) -> dict[str, npt.NDArray[np.float32]]:
        """Vectors of already indexed entries whose text is unchanged in ``batch`` (a
        reinforcement or a tag change must not cost a model call)."""
        out: dict[str, npt.NDArray[np.float32]] = {}
        for e in batch:
            scope = self._scope_of.get(e.id)
            if scope is None:
                continue
            cat = self._scopes[scope]
            row = cat.row_of[e.id]
            old = cat.entries[row]
            if (
                cat.dense is not None
                and cat.has_vec.a[row]
                and old is not None
                and self.text_fn(old) == self.text_fn(e)
            ):
                out[e.id] = cat.dense.reconstruct(np.asarray([row], np.int64))[0]
        return out

    def export_scope(
        self, scope: str
    ) -> tuple[list[Entry], npt.NDArray[np.float32] | None, npt.NDArray[np.bool_]]:
        """The live entries of ``scope`` (row order), their vectors (``None`` without an
        embedder; zero rows where ``has_vec`` is false) and ``has_vec``: a snapshot's input."""
        with self._lock:
            cat = self._scopes.get(scope)
            if cat is None:
                return [], None, np.zeros(0, np.bool_)
            rows = np.flatnonzero(cat.alive.view).astype(np.int64)
            entries = [cat.entries[r] for r in rows.tolist()]
            has = cat.has_vec.a[rows].copy()
            vecs = None
            if cat.dense is not None and self.embedder is not None:
                vecs = np.zeros((len(rows), self.embedder.dim), np.float32)
                if has.any():
                    vecs[has] = cat.dense.reconstruct(rows[has])
            return [e for e in entries if e is not None], vecs, has

    def remove(self, entry_ids: Iterable[str]) -> int:
        """Drop entries from every index; returns how many were present."""
        with self._lock:
            return self._remove_locked(list(entry_ids))

    def _remove_locked(self, entry_ids: list[str]) -> int:
        n = 0
        for eid in entry_ids:
            scope = self._scope_of.pop(eid, None)
            if scope is None:
                continue
            cat = self._scopes[scope]
            row = cat.drop(eid)
            if row is None:
                continue
            cat.bm25.remove([row])
            if cat.dense is not None:
                cat.dense.remove([row])
            if cat.static is not None:
                cat.drop_first_pass(np.asarray([row], np.int64))
            n += 1
        return n

    # -- search --------------------------------------------------------------

    def search(
        self,
        query: MemoryQuery | str,
        scopes: list[str] | None = None,
        now_ms: int | None = None,
        *,
        depth: int | None = None,
        dense: bool = True,
        notes: IndexNotes | None = None,
    ) -> list[ScoredEntry]:
        """The best ``max_results`` entries of ``scopes`` (default: the query's, else all)
        for ``query``, best first; ``now_ms`` (default: now) drives decay and recency.
        ``depth``: return that many instead (a caller that drops some, e.g. copies), from
        the same candidate pool. ``dense`` off: BM25 and the filters alone.

        Never fails for a broken index: an embedder that raises, or an index whose search
        does, is left out and the others rank (none left: no hits); ``notes`` gets which
        indexes answered and why the others did not (:class:`IndexNotes`)."""
        q = MemoryQuery(query=query) if isinstance(query, str) else query
        now = int(time.time() * 1000) if now_ms is None else now_ms
        notes = notes if notes is not None else IndexNotes()
        with tracing.stage("retrieval.search"), self._lock:
            cats = self._searched_locked(scopes, q.scopes)
            qvec = self._query_vector(q, cats, notes) if dense else None
            svec, sfloor = self._first_pass_vector(q, cats) if dense else (None, None)
            dim = self.embedder.dim if self.embedder is not None else 1
            k = q.max_results if depth is None else depth
            r = SearchRound(q, cats, qvec, now, self.config, dim, self.text_fn, svec=svec,
                            sfloor=sfloor)
            try:
                out = ranked(r, k)
            except Exception as exc:
                return degraded(r, k, exc, notes)
            if q.query is not None:
                notes.ok("bm25")
                if qvec is not None or svec is not None:  # meaning, full or first pass
                    notes.ok("dense")
            return out

    def unembedded(self, scopes: Iterable[str]) -> dict[str, int]:
        """Per scope of ``scopes``, indexed entries still waiting for a vector (none
        listed: every one has its vector, or there is no embedder)."""
        with self._lock:
            cats = [c for s in scopes if (c := self._scopes.get(s)) is not None]
            return unembedded(cats, self.embedder is not None)

    def mark_vectors(self, hits: list[ScoredEntry], text: bool) -> list[ScoredEntry]:
        """``hits`` of a search (``text``: by a text query) with ``has_vector`` saying
        whether each had its vector when ranked."""
        with self._lock:
            return mark_vectors(hits, self._scopes, text and self.embedder is not None)

    def _searched_locked(
        self, scopes: list[str] | None, default: list[str] | None
    ) -> list[ScopeIndex]:
        """The indexes of ``scopes`` (None: ``default``, else every scope) holding entries."""
        names = scopes if scopes is not None else default or list(self._scopes)
        # an empty scope has nothing to find (and an empty FAISS search still costs)
        return [self._scopes[s] for s in names if s in self._scopes and len(self._scopes[s])]

