"""Entry vectors for the comparisons a worker makes (near duplicates in dedupe and in the
team's pooled statements): the vector an entry already stores when the index role made it
with this worker's embedder, else one embedded now, off the event loop.

Stored vectors come first because the model is the ceiling: about 110 short texts/s on
two cores, so embedding a scope's window again per dedupe run would cost more than the
rest of maintenance. A transformer gets stored vectors only (:class:`TextVectors`): it
runs on the worker's event loop. Without an installed embedder there is nothing to compare
by meaning, and callers merge exact duplicates only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from blackboard import Entry
from consolidation.text import entry_text
from retrieval.embedders import Embedder

from .indexer import has_current_vector

__all__ = ["TextVectors", "entry_vectors"]


def _stored(e: Entry, embedder: Embedder) -> np.ndarray | None:
    if e.embedding is None or not has_current_vector(e, embedder):
        return None
    return np.frombuffer(e.embedding, dtype=np.float32)


async def entry_vectors(entries: Sequence[Entry], embedder: Embedder) -> np.ndarray:
    """One row per entry (same order): its stored vector, or its text embedded now."""
    out = np.zeros((len(entries), embedder.dim), dtype=np.float32)
    todo: list[int] = []
    for i, e in enumerate(entries):
        v = _stored(e, embedder)
        if v is None:
            todo.append(i)
        else:
            out[i] = v
    if todo:
        texts = [entry_text(entries[i]) for i in todo]
        out[todo] = await asyncio.to_thread(embedder.embed, texts)
    return out


class TextVectors:
    """A :data:`~consolidation.transformer.Similarity` over the vectors a batch's entries
    store (:meth:`stored`): a transformer calls it synchronously on the worker's event
    loop, where running the model (or loading it) would stall every other edge, the
    heartbeats and the lease renewals with it. A text without a stored vector gets a zero
    row, so it matches nothing by meaning and merges only with an equal text; the dedupe
    job, which embeds what is missing off the loop, finds it later."""

    def __init__(self, dim: int, known: dict[str, np.ndarray]) -> None:
        self.dim = dim
        self.known = known

    @classmethod
    def stored(cls, entries: Sequence[Entry], embedder: Embedder) -> TextVectors:
        known = {entry_text(e): v for e in entries if (v := _stored(e, embedder)) is not None}
        return cls(embedder.dim, known)

    def __call__(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            v = self.known.get(t)
            if v is not None:
                out[i] = v
        return out
