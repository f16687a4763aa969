"""The query layer: query model, lenses, embedders, dense and BM25 indexes, fusion and the
in-process search engine. Imports only :mod:`blackboard`."""

from __future__ import annotations

from .analyzer import Analyzer
from .bm25 import BM25Hits, BM25Index
from .bm25_variants import BM25Params, BM25Variant, get_bm25_variant, register_bm25_variant
from .dense import DenseHits, DenseIndex, DenseManifest, configure_faiss_threads
from .embedders import (
    Embedder,
    EmbedderUnavailable,
    HashingEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    default_embedder,
    get_embedder,
    register_embedder,
)
from .engine import EngineStats, SearchEngine
from .fusion import convex, minmax, mmr, rrf
from .lens import LensPreset, UnknownLens, facts_about, known_lenses, register_lens
from .query import MemoryQuery, TagFilter
from .scoring import ScoredEntry, ScoringConfig
from .text import entry_text

__all__ = [
    "Analyzer",
    "BM25Hits",
    "BM25Index",
    "BM25Params",
    "BM25Variant",
    "DenseHits",
    "DenseIndex",
    "DenseManifest",
    "Embedder",
    "EmbedderUnavailable",
    "EngineStats",
    "HashingEmbedder",
    "LensPreset",
    "MemoryQuery",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "ScoredEntry",
    "ScoringConfig",
    "SearchEngine",
    "TagFilter",
    "UnknownLens",
    "configure_faiss_threads",
    "convex",
    "default_embedder",
    "entry_text",
    "facts_about",
    "get_bm25_variant",
    "get_embedder",
    "known_lenses",
    "minmax",
    "mmr",
    "register_bm25_variant",
    "register_embedder",
    "register_lens",
    "rrf",
]
