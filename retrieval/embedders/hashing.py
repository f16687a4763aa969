"""A deterministic, dependency-free embedder: feature hashing of words and char n-grams."""

from __future__ import annotations

import itertools
import re
import zlib

import numpy as np

from .base import Vectors, l2_normalise

__all__ = ["HashingEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Signed feature hashing (crc32, stable across processes and platforms) of lowercase
    word unigrams, word bigrams and character n-grams of each word (padded with ``#``).

    No model, no download; similar texts share features, so it gives a lexical-fuzzy
    vector space useful offline and in tests. ``dim`` is the vector length.
    """

    def __init__(self, dim: int = 384, ngram_range: tuple[int, int] = (3, 4)) -> None:
        self.dim = dim
        self.ngram_range = ngram_range
        self.name = f"hashing-v1-{dim}-{ngram_range[0]}{ngram_range[1]}"

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = _WORD.findall(text.lower())
        feats: list[tuple[str, float]] = [("w:" + w, 1.0) for w in words]
        feats += [("b:" + a + " " + b, 1.0) for a, b in itertools.pairwise(words)]
        lo, hi = self.ngram_range
        for w in words:
            p = f"#{w}#"
            for n in range(lo, hi + 1):
                # char n-grams weigh less than whole words: they only add fuzziness
                feats += [("c:" + p[i : i + n], 0.5) for i in range(max(len(p) - n + 1, 0))]
        return feats

    def embed(self, texts: list[str]) -> Vectors:
        """float32 ``(len(texts), dim)``, rows L2-normalised."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            feats = self._features(text)
            if not feats:
                continue
            h = np.fromiter(
                (zlib.crc32(f.encode()) for f, _ in feats), dtype=np.uint64, count=len(feats)
            )
            w = np.fromiter((v for _, v in feats), dtype=np.float32, count=len(feats))
            # the top bit gives the sign so collisions cancel out instead of adding up
            sign = np.where((h >> np.uint64(31)) & np.uint64(1), -1.0, 1.0).astype(np.float32)
            np.add.at(out[row], (h % np.uint64(self.dim)).astype(np.int64), w * sign)
        return l2_normalise(out)
