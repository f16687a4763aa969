"""BM25 scoring variants (the formulas of bm25s, after Kamphuis et al., ECIR 2020).

Each variant is an idf function of (df, N) and a term-frequency component of
(tf, doc length, mean doc length, k1, b, delta), all numpy, float64.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from blackboard import InvalidArgument

__all__ = [
    "BM25Params",
    "BM25Variant",
    "get_bm25_variant",
    "known_bm25_variants",
    "register_bm25_variant",
]

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class BM25Params:
    """``k1`` saturation, ``b`` length normalisation, ``delta`` lower bound (BM25+ only)."""

    k1: float = 1.5
    b: float = 0.75
    delta: float = 0.5


@dataclass(frozen=True, slots=True)
class BM25Variant:
    """``idf(df, N)`` and ``tfc(tf, dl, avgdl, params)``; the score of a document is
    ``sum over query terms of idf * tfc``. ``tfc(0, ...)`` may be non-zero (BM25+): every
    document then gets that base score per query term."""

    name: str
    idf: Callable[[F64, int], F64]
    tfc: Callable[[F64, F64, float, BM25Params], F64]


def _norm(dl: F64, avgdl: float, p: BM25Params) -> F64:
    return p.k1 * ((1.0 - p.b) + p.b * dl / avgdl)


def _tfc_robertson(tf: F64, dl: F64, avgdl: float, p: BM25Params) -> F64:
    return tf / (_norm(dl, avgdl, p) + tf)


def _tfc_bm25plus(tf: F64, dl: F64, avgdl: float, p: BM25Params) -> F64:
    return (p.k1 + 1.0) * tf / (_norm(dl, avgdl, p) + tf) + p.delta


def _idf_lucene(df: F64, n: int) -> F64:
    return np.log(1.0 + (n - df + 0.5) / (df + 0.5))


def _idf_robertson(df: F64, n: int) -> F64:
    # bm25s clamps the ratio at 1 so that very common terms score 0, never negative
    return np.log(np.maximum((n - df + 0.5) / (df + 0.5), 1.0))


def _idf_bm25plus(df: F64, n: int) -> F64:
    return np.log((n + 1.0) / df)


_lock = threading.Lock()
_variants: dict[str, BM25Variant] = {}


def register_bm25_variant(variant: BM25Variant, *, replace: bool = False) -> None:
    with _lock:
        if variant.name in _variants and not replace:
            raise InvalidArgument(f"BM25 variant {variant.name!r} is already registered")
        _variants[variant.name] = variant


def known_bm25_variants() -> list[str]:
    with _lock:
        return sorted(_variants)


def get_bm25_variant(name: str) -> BM25Variant:
    with _lock:
        v = _variants.get(name)
    if v is None:
        raise InvalidArgument(
            f"unknown BM25 variant {name!r}; known: {', '.join(known_bm25_variants())}"
        )
    return v


register_bm25_variant(BM25Variant("lucene", _idf_lucene, _tfc_robertson))
register_bm25_variant(BM25Variant("robertson", _idf_robertson, _tfc_robertson))
register_bm25_variant(BM25Variant("bm25+", _idf_bm25plus, _tfc_bm25plus))
