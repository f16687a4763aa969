"""Helpers of the recall tests: an embedder that counts its calls."""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt

from retrieval.embedders import HashingEmbedder


class CountingEmbedder:
    """The hashing embedder (no model download) under ``name``, counting texts embedded."""

    def __init__(self, name: str | None = None) -> None:
        self.inner = HashingEmbedder()
        self.name = name or self.inner.name
        self.dim = self.inner.dim
        self.calls = 0
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        self.texts += texts
        return self.inner.embed(texts)


class GatedEmbedder(CountingEmbedder):
    """Embeds only once ``gate`` is set: a model that lags behind every write (the index
    role's, busy elsewhere)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        self.gate.wait(30)
        return super().embed(texts)
