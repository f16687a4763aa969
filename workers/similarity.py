"""Entry vectors for the comparisons a worker makes (near duplicates in dedupe and in the
team's pooled statements): the vector an entry already stores when the index role made it
with this worker's embedder, else one embedded now, off the event loop.

Stored vectors come first because the model is the ceiling: about 110 short texts/s on
two cores, so embedding a scope's window again per dedupe run would cost more than the
rest of maintenance. Without an installed embedder there is nothing to compare by meaning,
and callers merge exact duplicates only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from blackboard import Entry
from consolidation.text import entry_text
from retrieval.embedders import Embedder

__all__ = ["TextVectors", "entry_vectors"]


def _stored(e: Entry, embedder: Embedder) -> np.ndarray | None:
    if e.embedding is None or e.embedder != embedder.name or len(e.embedding) != embedder.dim * 4:
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
    """A :data:`~consolidation.transformer.Similarity` over texts whose vectors were
    computed beforehand (:meth:`of_entries`, awaited before a transformer runs): the
    transformer calls it synchronously, on the event loop, where a model run would stall
    every other edge of the worker. A text it does not know is embedded there all the
    same (correct, only slower): a transformer compares the texts of its batch."""

    def __init__(self, embedder: Embedder, known: dict[str, np.ndarray]) -> None:
        self.embedder = embedder
        self.known = known

    @classmethod
    async def of_entries(cls, entries: Sequence[Entry], embedder: Embedder) -> TextVectors:
        vecs = await entry_vectors(entries, embedder)
        return cls(embedder, {entry_text(e): v for e, v in zip(entries, vecs, strict=True)})

    def __call__(self, texts: list[str]) -> np.ndarray:
        missing = sorted({t for t in texts if t not in self.known})
        if missing:
            self.known.update(zip(missing, self.embedder.embed(missing), strict=True))
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([self.known[t] for t in texts])

