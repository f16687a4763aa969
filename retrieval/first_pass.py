"""The engine's first pass: a rough vector for an entry the moment it is indexed, while it
waits for the model's (:mod:`retrieval.embedders.static`), and the query's to meet it.

Rows live in their own per-scope index (their cosines are never compared with the
model's) and are dropped when the full vector arrives (:meth:`ScopeIndex.drop_first_pass`);
when the first pass has a space of its own for the relevance floor
(:meth:`~retrieval.embedders.static.StaticEmbedder.embed_with_floor`), each row keeps that
vector too. The engine holds the lock around every call here.
"""

from __future__ import annotations

import numpy as np

from blackboard import Entry

from .backlog import Vec
from .dense import DenseIndex
from .embedders.base import Embedder
from .scope_index import ScopeIndex
from .text import entry_text

__all__ = ["add_rows", "first_pass_indexes", "query_vectors", "rough_fits"]


def first_pass_indexes(fp: Embedder | None) -> tuple[DenseIndex | None, DenseIndex | None]:
    """A new scope's first-pass index and its floor index (None: no first pass, or no
    floor space of its own)."""
    if fp is None:
        return None, None
    floor = (DenseIndex(fp.dim, embedder=f"{fp.name}:floor")
             if hasattr(fp, "embed_with_floor") else None)
    return DenseIndex(fp.dim, embedder=fp.name), floor


def rough_fits(e: Entry, long_chars: int) -> bool:
    """Whether ``e`` gets a first-pass vector while it waits: not a long text (its main
    text over ``long_chars``, 0: no limit), whose mean of static token vectors drifts toward
    every text's and meets every query; it ranks by BM25 until its own vector arrives.
    Issue 31, in-process engine, every turn first-pass only, R@10 (conversations 1-3 /
    4-6) on the long user-assistant set (``bench/longchat.py``), the input layer's rows:
    ``add_messages`` 0.7160 / 0.7716 -> 0.7407 / 0.8519, one ``store`` a turn 0.5000 /
    0.5309 -> 0.5185 / 0.5679 (README: with the distilled rows); LoCoMo, whose longest turn
    is 434 characters, unchanged."""
    return not long_chars or len(entry_text(e, main=True)) <= long_chars


def vectors(fp: Embedder, texts: list[str]) -> tuple[Vec, Vec | None]:
    """First-pass vectors of ``texts`` and, when ``fp`` has its own space for the relevance
    floor, those (else None)."""
    both = getattr(fp, "embed_with_floor", None)
    if callable(both):
        vecs, floor = both(texts)
        return vecs, floor
    return fp.embed(texts), None


def add_rows(fp: Embedder, cat: ScopeIndex, waiting: list[tuple[int, str]]) -> None:
    """First-pass rows in ``cat`` for ``waiting`` (row, text), in microseconds a text
    (none: ``cat`` has no first-pass index); raises what the first pass raises (one that
    cannot load: the engine turns it off), with nothing added."""
    if cat.static is None or not waiting:
        return
    vecs, floors = vectors(fp, [t for _, t in waiting])
    rows = np.asarray([r for r, _ in waiting], np.int64)
    cat.static.add(rows, vecs)
    if floors is not None and cat.static_floor is not None:
        cat.static_floor.add(rows, floors)
    cat.has_static.a[rows] = True


def query_vectors(fp: Embedder, query: str) -> tuple[Vec, Vec | None]:
    """The query's first-pass vector and its floor vector (None: the same space)."""
    vecs, floor = vectors(fp, [query])
    return vecs[0], None if floor is None else floor[0]
