"""An updatable BM25 index whose scores equal a from-scratch bm25s index over the live
documents.

bm25s cannot add or delete, and its precomputed weights bake in idf and mean length. Here
the postings keep raw term frequencies, and the weights are computed at query time from
global statistics (df, N, total length) kept over the live documents, so any add or
remove changes every score exactly as a full rebuild would.

Storage: an immutable *main* segment (term-major CSR of (slot, tf) postings, built by
:meth:`BM25Index.compact`, in a background thread once the delta passes a fraction of
main) plus a small *delta* of per-term posting lists for documents added since, plus a
deletion mask over slots. A document (an int64 id) lives in one slot; an update retires
the old slot and takes a new one.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import numpy.typing as npt

from blackboard import InvalidArgument

from .analyzer import Analyzer
from .bm25_variants import BM25Params, get_bm25_variant
from .growable import GrowableArray

__all__ = ["BM25Hits", "BM25Index"]

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
F64 = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class BM25Hits:
    """Documents matching at least one query term: ``ids`` int64 ``(m,)``, ``scores``
    float64 ``(m,)``, best first; ``extra``: scores of the ``score_ids`` asked for."""

    ids: I64
    scores: F64
    extra: F64 = field(default_factory=lambda: np.zeros(0))


class BM25Index:
    """BM25 over texts keyed by non-negative int64 ids (kept dense: memory is O(max id)).

    ``variant`` is a name from :mod:`retrieval.bm25_variants` (``lucene`` default,
    ``robertson``, ``bm25+``). ``compact_fraction``: the delta is merged into main when its
    postings exceed that fraction of main's (and at least ``min_delta``); in a background
    thread when ``background``. Thread-safe.
    """

    def __init__(
        self,
        *,
        variant: str = "lucene",
        params: BM25Params | None = None,
        analyzer: Analyzer | None = None,
        compact_fraction: float = 0.1,
        min_delta: int = 20_000,
        background: bool = True,
    ) -> None:
        self.variant = get_bm25_variant(variant)
        self.params = params or BM25Params()
        self.analyzer = analyzer or Analyzer()
        self.compact_fraction = compact_fraction
        self.min_delta = min_delta
        self.background = background
        self._lock = threading.RLock()
        self._vocab: dict[str, int] = {}
        self._df = GrowableArray(np.int64)
        self._slot_id = GrowableArray(np.int64)  # slot -> id
        self._slot_len = GrowableArray(np.float64)  # slot -> document length (terms)
        self._alive = GrowableArray(np.bool_, False)
        self._slot_terms: list[tuple[I32, F64] | None] = []  # slot -> (term ids, tfs)
        self._slot_of = GrowableArray(np.int64, -1)  # id -> live slot
        self._n_live = 0
        self._total_len = 0.0
        # main segment: postings of slots [0, _main_end), term-major
        self._main_end = 0
        self._m_indptr: I64 = np.zeros(1, np.int64)
        self._m_slots: I64 = np.zeros(0, np.int64)
        self._m_tf: F64 = np.zeros(0, np.float64)
        # delta segment: term -> (slots, tfs) of slots >= _main_end
        self._delta: dict[int, tuple[list[int], list[float]]] = {}
        self._delta_postings = 0
        self._compactor: threading.Thread | None = None

    # -- state ---------------------------------------------------------------

    def __len__(self) -> int:
        return self._n_live

    def __contains__(self, doc_id: int) -> bool:
        return 0 <= doc_id < self._slot_of.n and self._slot_of.a[doc_id] >= 0

    @property
    def avgdl(self) -> float:
        """Mean length (terms) of the live documents."""
        return self._total_len / self._n_live if self._n_live else 0.0

    def document_frequency(self, term: str) -> int:
        t = self._vocab.get(term)
        return int(self._df.a[t]) if t is not None else 0

    # -- mutation ------------------------------------------------------------

    def add(self, ids: Sequence[int] | I64, texts: Sequence[str]) -> None:
        """Index ``texts`` under ``ids`` (an id already present is replaced)."""
        ids_a = np.asarray(ids, dtype=np.int64).reshape(-1)
        if len(ids_a) != len(texts):
            raise InvalidArgument("ids and texts differ in length")
        if len(ids_a) and (ids_a.min() < 0 or ids_a.max() >= 1 << 40):
            raise InvalidArgument("BM25 ids must be in [0, 2**40)")
        if len(np.unique(ids_a)) != len(ids_a):
            raise InvalidArgument("duplicate ids in one add")
        # tokenise outside the lock: it is the slow part
        docs = self.analyzer.terms(list(texts))
        with self._lock:
            self._remove_locked(ids_a)
            bulk = len(ids_a) >= self.min_delta
            for doc_id, terms in zip(ids_a.tolist(), docs, strict=True):
                self._add_one(doc_id, terms, to_delta=not bulk)
        if bulk:
            self.compact()
        else:
            self._maybe_compact()

    def _add_one(self, doc_id: int, terms: list[str], *, to_delta: bool) -> None:
        counts = Counter(terms)
        tids = np.empty(len(counts), dtype=np.int32)
        tfs = np.empty(len(counts), dtype=np.float64)
        for j, (term, c) in enumerate(counts.items()):
            t = self._vocab.get(term)
            if t is None:
                t = self._vocab[term] = len(self._vocab)
                self._df.extend([0])
            tids[j], tfs[j] = t, c
        slot = self._slot_id.n
        self._slot_id.extend([doc_id])
        self._slot_len.extend([len(terms)])
        self._alive.extend([True])
        self._slot_terms.append((tids, tfs))
        self._slot_of.reserve(doc_id + 1)
        self._slot_of.n = max(self._slot_of.n, doc_id + 1)
        self._slot_of.a[doc_id] = slot
        self._df.a[tids] += 1
        self._n_live += 1
        self._total_len += len(terms)
        if to_delta:
            for t, f in zip(tids.tolist(), tfs.tolist(), strict=True):
                s, v = self._delta.setdefault(t, ([], []))
                s.append(slot)
                v.append(f)
            self._delta_postings += len(tids)

    def update(self, doc_id: int, text: str) -> None:
        """Replace the text of ``doc_id`` (or add it)."""
        self.add([doc_id], [text])

    def remove(self, ids: Sequence[int] | I64) -> int:
        """Drop ``ids``; returns how many were present."""
        ids_a = np.asarray(ids, dtype=np.int64).reshape(-1)
        with self._lock:
            return self._remove_locked(ids_a)

    def _remove_locked(self, ids: I64) -> int:
        removed = 0
        for doc_id in ids.tolist():
            if not 0 <= doc_id < self._slot_of.n:
                continue
            slot = int(self._slot_of.a[doc_id])
            if slot < 0:
                continue
            self._slot_of.a[doc_id] = -1
            self._alive.a[slot] = False
            st = self._slot_terms[slot]
            assert st is not None
            self._df.a[st[0]] -= 1
            self._slot_terms[slot] = None  # postings stay in the segments, masked by _alive
            self._n_live -= 1
            self._total_len -= float(self._slot_len.a[slot])
            removed += 1
        return removed

    # -- compaction ------------------------------------------------------------

    def _maybe_compact(self) -> None:
        main = len(self._m_slots)
        if self._delta_postings <= max(self.min_delta, self.compact_fraction * main):
            return
        if not self.background:
            self.compact()
            return
        with self._lock:
            if self._compactor is not None and self._compactor.is_alive():
                return
            self._compactor = threading.Thread(
                target=self.compact, name="bm25-compact", daemon=True
            )
            self._compactor.start()

    def wait_compaction(self, timeout: float | None = None) -> None:
        """Block until a running background compaction has finished."""
        t = self._compactor
        if t is not None:
            t.join(timeout)

    def compact(self) -> None:
        """Merge the delta into a new main segment over the live slots (scores unchanged)."""
        with self._lock:
            end = self._slot_id.n
            parts = [(s, st) for s, st in enumerate(self._slot_terms[:end]) if st is not None]
        # build outside the lock: the slots' term arrays never change once written
        if parts:
            slots = np.concatenate([np.full(len(st[0]), s, np.int64) for s, st in parts])
            terms = np.concatenate([st[0] for _, st in parts]).astype(np.int64)
            tfs = np.concatenate([st[1] for _, st in parts])
        else:
            slots, terms, tfs = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        order = np.argsort(terms, kind="stable")
        with self._lock:
            n_terms = len(self._vocab)
            indptr = np.zeros(n_terms + 1, np.int64)
            np.cumsum(np.bincount(terms, minlength=n_terms), out=indptr[1:])
            self._m_indptr, self._m_slots, self._m_tf = indptr, slots[order], tfs[order]
            self._main_end = end
            # slots added while building stay in the delta
            self._delta = {}
            self._delta_postings = 0
            for slot in range(end, self._slot_id.n):
                st = self._slot_terms[slot]
                if st is None:
                    continue
                for t, f in zip(st[0].tolist(), st[1].tolist(), strict=True):
                    s, v = self._delta.setdefault(t, ([], []))
                    s.append(slot)
                    v.append(f)
                self._delta_postings += len(st[0])

    # -- search --------------------------------------------------------------

    def _query_ids(self, query: str) -> tuple[I64, F64]:
        """Known query terms (df > 0) as ids and their multiplicities."""
        c = Counter(self.analyzer.query_terms(query))
        pairs = [(self._vocab[t], m) for t, m in c.items() if t in self._vocab]
        tids = np.array([p[0] for p in pairs], dtype=np.int64)
        mult = np.array([p[1] for p in pairs], dtype=np.float64)
        keep = self._df.a[tids] > 0
        return tids[keep], mult[keep]

    def _postings(self, tids: I64) -> tuple[I64, F64, I64]:
        """(slot, tf, query-term index) of every posting of the query terms."""
        s_parts: list[I64] = []
        f_parts: list[F64] = []
        q_parts: list[I64] = []
        n_main = len(self._m_indptr) - 1
        for qi, t in enumerate(tids.tolist()):
            if t < n_main:
                a, b = self._m_indptr[t], self._m_indptr[t + 1]
                s_parts.append(self._m_slots[a:b])
                f_parts.append(self._m_tf[a:b])
                q_parts.append(np.full(b - a, qi, np.int64))
            d = self._delta.get(t)
            if d is not None:
                s_parts.append(np.fromiter(d[0], np.int64, len(d[0])))
                f_parts.append(np.fromiter(d[1], np.float64, len(d[1])))
                q_parts.append(np.full(len(d[0]), qi, np.int64))
        if not s_parts:
            return np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64)
        return np.concatenate(s_parts), np.concatenate(f_parts), np.concatenate(q_parts)

    def _score(self, query: str, allowed_slots: Mask | None) -> tuple[I64, F64]:
        """Live (and allowed) slots matching a query term, with their scores."""
        tids, mult = self._query_ids(query)
        if not len(tids):
            return np.zeros(0, np.int64), np.zeros(0)
        slots, tf, qi = self._postings(tids)
        live = self._alive.a[slots]
        if allowed_slots is not None:
            live &= allowed_slots[slots]
        slots, tf, qi = slots[live], tf[live], qi[live]
        if not len(slots):
            return slots, tf
        p, avgdl = self.params, self.avgdl
        idf = self.variant.idf(self._df.a[tids].astype(np.float64), self._n_live) * mult
        w = idf[qi] * self.variant.tfc(tf, self._slot_len.a[slots], avgdl, p)
        # BM25+ gives every document tfc(0) per query term; add it for the terms a matched
        # document lacks (bm25s adds it to every document).
        base = self.variant.tfc(np.zeros(1), np.full(1, avgdl), avgdl, p)[0]
        uniq, scores, present = _sum_by_slot(slots, w, idf[qi] * base if base else None,
                                             self._slot_id.n)
        if present is not None:
            scores += idf.sum() * base - present
        return uniq, scores

    def _allowed_mask(self, allowed_ids: I64 | None) -> Mask | None:
        if allowed_ids is None:
            return None
        mask = np.zeros(self._slot_id.n, dtype=np.bool_)
        a = np.asarray(allowed_ids, dtype=np.int64)
        a = a[(a >= 0) & (a < self._slot_of.n)]
        slots = self._slot_of.a[a]
        mask[slots[slots >= 0]] = True
        return mask

    def search(
        self,
        query: str,
        k: int,
        allowed_ids: I64 | None = None,
        score_ids: I64 | None = None,
    ) -> BM25Hits:
        """Top-``k`` documents by BM25 among ``allowed_ids`` (``None``: all) that match at
        least one query term; with ``score_ids``, also the score of each of those (0: no
        match or absent) in ``BM25Hits.extra``, from the same scoring pass."""
        extra = np.zeros(0)
        with self._lock:
            slots, scores = self._score(query, self._allowed_mask(allowed_ids))
            if score_ids is not None:
                extra = self._lookup(slots, scores, np.asarray(score_ids, dtype=np.int64))
            if len(scores) > k:
                top = np.argpartition(-scores, k - 1)[:k]
                slots, scores = slots[top], scores[top]
            ids = self._slot_id.a[slots]
        order = np.lexsort((ids, -scores))
        return BM25Hits(ids[order], scores[order], extra)

    def _lookup(self, slots: I64, scores: F64, ids: I64) -> F64:
        full = np.zeros(self._slot_id.n)
        full[slots] = scores
        out = np.zeros(len(ids))
        ok = (ids >= 0) & (ids < self._slot_of.n)
        sl = np.full(len(ids), -1, np.int64)
        sl[ok] = self._slot_of.a[ids[ok]]
        have = sl >= 0
        out[have] = full[sl[have]]
        return out

    def scores_for(self, query: str, ids: I64) -> F64:
        """BM25 score of each of ``ids`` (0 for a document that matches no query term or is
        absent), float64 ``(n,)``."""
        ids = np.asarray(ids, dtype=np.int64)
        return self.search(query, 0, ids, score_ids=ids).extra


def _sum_by_slot(
    slots: I64, w: F64, w2: F64 | None, n_slots: int
) -> tuple[I64, F64, F64 | None]:
    """The distinct ``slots`` (ascending) with the sum of ``w`` (and of ``w2``) over each.

    Many postings for the slot count (a common query term): accumulate into a dense array
    of every slot, as bm25s does, which is linear; few: sort them (no pass over every slot).
    A slot counts as matched even if its sum is 0 (a robertson idf can be 0)."""
    if len(slots) * 8 < n_slots:
        uniq, inv = np.unique(slots, return_inverse=True)
        sums = cast(F64, np.bincount(inv, weights=w, minlength=len(uniq)))
        more = None if w2 is None else cast(F64, np.bincount(inv, weights=w2, minlength=len(uniq)))
        return uniq.astype(np.int64), sums, more
    hit = np.zeros(n_slots, np.bool_)
    hit[slots] = True
    at = np.flatnonzero(hit)
    sums = cast(F64, np.bincount(slots, weights=w, minlength=n_slots))[at]
    more = None if w2 is None else cast(F64, np.bincount(slots, weights=w2, minlength=n_slots))[at]
    return at.astype(np.int64), sums, more
