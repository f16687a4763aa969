"""The search engine's embedding backlog: the entries waiting for their model vector, taken
in batches and embedded outside the engine's lock, put back, adopted from another process's
stored vectors, or embedded by a search that needs a few of them (:class:`EmbeddingBacklog`,
the part of :class:`~retrieval.engine.SearchEngine` that owns the queue)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from blackboard import Entry

from .embedders.base import Embedder
from .scope_index import ScopeIndex

__all__ = ["OUT_WAIT_S", "EmbeddingBacklog", "Pending", "Vec"]

Vec = npt.NDArray[np.float32]
#: Entries waiting for a vector: (their scope's index, row, indexed text).
Pending = list[tuple[ScopeIndex, int, str]]
#: How long a search waits for a batch being embedded elsewhere before embedding its own
#: entries of it itself (a stuck remote embedder must not hold a search forever).
OUT_WAIT_S = 10.0


def _needs_vector(x: tuple[ScopeIndex, int, str]) -> bool:
    """Whether a waiting entry still wants its vector: its row indexed and without one."""
    cat, row, _ = x
    return bool(cat.alive.a[row]) and not cat.has_vec.a[row]


@dataclass(eq=False)
class _Out:
    """A batch taken out of the queue, being embedded outside the engine's lock; ``vecs``
    once ``done`` (None: the embedding failed)."""

    items: Pending
    done: threading.Event = field(default_factory=threading.Event)
    vecs: Vec | None = None


class EmbeddingBacklog:
    """The queue of entries waiting for a vector, mixed into
    :class:`~retrieval.engine.SearchEngine`, which sets these attributes (``_lock`` held by
    every ``*_locked`` method's caller)."""

    embedder: Embedder | None
    embed_batch: int
    on_embedded: Callable[[list[tuple[Entry, Vec]]], None] | None
    _lock: threading.RLock
    _scopes: dict[str, ScopeIndex]
    _scope_of: dict[str, str]
    _pending: Pending
    _hot: dict[str, None]
    _out: list[_Out]
    _counts_lock: threading.Lock
    _embed_calls: int
    _embedded_texts: int
    _adopted: int

    def flush_embeddings(self) -> int:
        """Embed every queued entry; returns how many were embedded. The model runs outside
        the engine's lock, so adds and searches go on meanwhile (see :meth:`take_pending`)."""
        batch = self.take_pending()
        if not batch:
            return 0
        try:
            vecs = self.embed_pending(batch)
        except BaseException:
            self.requeue(batch)
            raise
        return self.put_vectors(batch, vecs)

    def take_pending(self, limit: int | None = None) -> Pending:
        """The oldest ``limit`` (None: all) queued entries still indexed, as (scope index, row,
        text), out of the queue until :meth:`put_vectors` (or :meth:`requeue`) returns
        them. A search that needs them meanwhile waits, holding the lock, for the vectors
        :meth:`embed_pending` computes; a caller that can wait asynchronously first
        (:meth:`EmbeddingQueue.settled <retrieval.embedding_queue.EmbeddingQueue.settled>`)
        keeps its event loop free."""
        with self._lock:
            live = self._next_locked(limit)
            n = len(live) if limit is None else min(limit, len(live))
            todo, self._pending = live[:n], live[n:]
            if todo and self.embedder is not None:
                self._out.append(_Out(todo))
                return todo
            return []

    def _next_locked(self, limit: int | None) -> Pending:
        # The queue's live entries in the order they are taken: the searched scopes'
        # first when more than ``limit`` wait.
        live = [x for x in self._pending if _needs_vector(x)]
        if self._hot and limit is not None and len(live) > limit:
            live = _searched_first(live, self._hot)
        return live

    def peek_pending(self, limit: int, scopes: Collection[str] | None = None) -> list[Entry]:
        """The entries :meth:`take_pending` would take next (at most ``limit``; ``scopes``:
        only theirs), left queued: a caller can look for their vectors elsewhere first
        (:meth:`adopt`)."""
        with self._lock:
            live = self._next_locked(limit)
            if scopes is not None:
                live = [x for x in live if x[0].scope in scopes]
            return [e for cat, row, _ in live[:limit] if (e := cat.entries[row]) is not None]

    def adopt(self, found: Iterable[tuple[str, int, bytes]]) -> int:
        """Give waiting entries a vector another process stored: ``(entry id, version,
        float32 bytes)`` of this engine's embedder, used only while the entry indexed is at
        that ``version`` (a stored vector is its version's content's; the caller checks the
        embedder's name) and still lacks one. Not handed to ``on_embedded``: it is stored
        already. -> how many were adopted."""
        emb = self.embedder
        if emb is None:
            return 0
        with self._lock:
            by_cat: dict[str, tuple[ScopeIndex, list[int], list[Vec]]] = {}
            for eid, version, raw in found:
                scope = self._scope_of.get(eid)
                if scope is None or len(raw) != emb.dim * 4:
                    continue
                cat = self._scopes[scope]
                row = cat.row_of[eid]
                e = cat.entries[row]
                if e is None or e.version != version or not _needs_vector((cat, row, "")):
                    continue
                _, rows, vecs = by_cat.setdefault(scope, (cat, [], []))
                rows.append(row)
                vecs.append(np.frombuffer(raw, dtype=np.float32))
            n = 0
            for cat, rows, vecs in by_cat.values():
                self._put_locked(cat, np.asarray(rows, np.int64), np.stack(vecs))
                n += len(rows)
            if n:
                self._pending = [x for x in self._pending if _needs_vector(x)]
                self._adopted += n
            return n

    def _put_locked(self, cat: ScopeIndex, rows: npt.NDArray[np.int64], vecs: Vec) -> None:
        # Rows of ``cat`` get their full vectors, replacing their first-pass ones.
        assert cat.dense is not None
        cat.dense.add(rows, vecs)
        cat.has_vec.a[rows] = True
        if cat.static is not None and cat.has_static.a[rows].any():
            cat.drop_first_pass(rows)

    @property
    def waiting(self) -> int:
        """Entries queued for a vector (not counting batches being embedded)."""
        return len(self._pending)

    def requeue(self, batch: Pending) -> None:
        """Queue ``batch`` again (its embedding failed: the next flush or search retries)."""
        with self._lock:
            self._settle(batch)
            self._pending = batch + self._pending

    def embed_pending(self, batch: Pending) -> Vec:
        """The vectors of ``batch``'s texts, ``(len(batch), dim)``. Takes no engine lock: a
        search holding it may be waiting for these very vectors (:meth:`_flush_locked`)."""
        emb = self.embedder
        assert emb is not None
        out = next((o for o in self._out if o.items is batch), None)
        vecs = None
        try:
            parts = []
            for i in range(0, len(batch), self.embed_batch):
                part = batch[i : i + self.embed_batch]
                parts.append(emb.embed([t for _, _, t in part]))
                with self._counts_lock:
                    self._embed_calls += 1
                    self._embedded_texts += len(part)
            vecs = np.concatenate(parts) if parts else np.zeros((0, emb.dim), np.float32)
            return vecs
        finally:
            if out is not None:  # a waiting search takes the vectors (None: embed yourself)
                out.vecs = vecs
                out.done.set()

    def put_vectors(self, batch: Pending, vecs: Vec) -> int:
        """Give ``batch``'s rows their vectors: rows still indexed and still without one (a
        row is never reused, so a live row is the entry the text came from); returns how
        many were set."""
        with self._lock:
            self._settle(batch)
            keep = [j for j, x in enumerate(batch) if _needs_vector(x)]
            by_cat: dict[int, list[int]] = {}
            for j in keep:
                by_cat.setdefault(id(batch[j][0]), []).append(j)
            for js in by_cat.values():
                cat = batch[js[0]][0]
                self._put_locked(cat, np.asarray([batch[j][1] for j in js], np.int64),
                                 vecs[js])
            if self.on_embedded is not None and keep:
                made = [(batch[j][0].entries[batch[j][1]], vecs[j]) for j in keep]
                self.on_embedded([(e, v) for e, v in made if e is not None])
            return len(keep)

    def _settle(self, batch: Pending) -> None:
        self._out = [o for o in self._out if o.items is not batch]

    def _flush_locked(self, limit: int | None = None,
                      cats: list[ScopeIndex] | None = None) -> int:
        # Under the lock held: the entries of ``cats`` (None: all) still without a vector
        # get it now -- from the batch being embedded elsewhere that holds them (waited
        # for, not computed twice), else embedded here. With ``limit`` (a search's bound),
        # only when they are at most that many: more means the model is behind the writes,
        # and a search that took its turn at the backlog would cost what the backlog
        # costs; they rank by BM25 alone until their batch is done.
        ids = None if cats is None else {id(c) for c in cats}

        def missing(xs: Pending) -> Pending:
            return [x for x in xs if _needs_vector(x) and (ids is None or id(x[0]) in ids)]

        outs = [(o, xs) for o in self._out if (xs := missing(o.items))]
        here = missing(self._pending)
        n = len(here) + sum(len(xs) for _, xs in outs)
        if not n or self.embedder is None or (limit is not None and n > limit):
            return 0
        done = 0
        for o, xs in outs:
            # The thread embedding it takes no engine lock, so waiting here cannot stall
            # it; a batch larger than the bound, a failed or a stuck one: embed ours here.
            small = limit is None or len(o.items) <= limit
            if small and o.done.wait(OUT_WAIT_S) and o.vecs is not None:
                done += self.put_vectors(o.items, o.vecs)
            else:
                here += xs
        if here:
            done += self.put_vectors(here, self.embed_pending(here))
            self._pending = [x for x in self._pending if _needs_vector(x)]
        return done


def _searched_first(live: Pending, hot: dict[str, None]) -> Pending:
    """``live`` with the entries of the ``hot`` scopes first (the most recently searched
    first), each group in queue order."""
    rank = {s: i for i, s in enumerate(reversed(hot))}
    far = len(rank)
    return sorted(live, key=lambda x: rank.get(x[0].scope, far))
