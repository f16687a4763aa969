"""The query layer: query model, lenses, embedders, dense and BM25 indexes, fusion, the
in-process search engine, the Redis index follower and the retriever behind
``AgentMemory.recall``. Imports only :mod:`blackboard`.

Names load lazily (PEP 562): ``import memory`` pulls in the query model without paying for
FAISS, bm25s and numpy until an index is built.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .analyzer import Analyzer
    from .bm25 import BM25Hits, BM25Index
    from .bm25_variants import BM25Params, BM25Variant, get_bm25_variant, register_bm25_variant
    from .dense import DenseHits, DenseIndex, DenseManifest, configure_faiss_threads
    from .embedders import (
        Embedder,
        EmbedderUnavailable,
        FastEmbedEmbedder,
        HashingEmbedder,
        MiniLMEmbedder,
        OpenAIEmbedder,
        default_embedder,
        get_embedder,
        register_embedder,
    )
    from .engine import EngineStats, SearchEngine
    from .follower import FollowerStats, IndexFollower
    from .fusion import convex, minmax, mmr, rrf
    from .lens import LensPreset, UnknownLens, facts_about, known_lenses, register_lens
    from .query import MemoryQuery, RecallOrder, TagFilter, as_query
    from .recall import Retriever
    from .rewrite import LLMQueryRewriter
    from .scoring import ScoredEntry, ScoringConfig
    from .snapshot import Snapshot, SnapshotManifest, load_snapshot, save_snapshot
    from .structured import StructuredRetriever
    from .text import entry_text
    from .timeline import resolve_periods

_WHERE = {
    "Analyzer": "analyzer",
    "BM25Hits": "bm25",
    "BM25Index": "bm25",
    "BM25Params": "bm25_variants",
    "BM25Variant": "bm25_variants",
    "get_bm25_variant": "bm25_variants",
    "register_bm25_variant": "bm25_variants",
    "DenseHits": "dense",
    "DenseIndex": "dense",
    "DenseManifest": "dense",
    "configure_faiss_threads": "dense",
    "Embedder": "embedders",
    "EmbedderUnavailable": "embedders",
    "FastEmbedEmbedder": "embedders",
    "HashingEmbedder": "embedders",
    "MiniLMEmbedder": "embedders",
    "OpenAIEmbedder": "embedders",
    "default_embedder": "embedders",
    "get_embedder": "embedders",
    "register_embedder": "embedders",
    "EngineStats": "engine",
    "SearchEngine": "engine",
    "FollowerStats": "follower",
    "IndexFollower": "follower",
    "convex": "fusion",
    "minmax": "fusion",
    "mmr": "fusion",
    "rrf": "fusion",
    "LensPreset": "lens",
    "UnknownLens": "lens",
    "facts_about": "lens",
    "known_lenses": "lens",
    "register_lens": "lens",
    "MemoryQuery": "query",
    "TagFilter": "query",
    "RecallOrder": "query",
    "as_query": "query",
    "Retriever": "recall",
    "LLMQueryRewriter": "rewrite",
    "ScoredEntry": "scoring",
    "ScoringConfig": "scoring",
    "Snapshot": "snapshot",
    "SnapshotManifest": "snapshot",
    "load_snapshot": "snapshot",
    "save_snapshot": "snapshot",
    "StructuredRetriever": "structured",
    "entry_text": "text",
    "resolve_periods": "timeline",
}

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
    "FastEmbedEmbedder",
    "FollowerStats",
    "HashingEmbedder",
    "IndexFollower",
    "LLMQueryRewriter",
    "LensPreset",
    "MemoryQuery",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "RecallOrder",
    "Retriever",
    "ScoredEntry",
    "ScoringConfig",
    "SearchEngine",
    "Snapshot",
    "SnapshotManifest",
    "StructuredRetriever",
    "TagFilter",
    "UnknownLens",
    "as_query",
    "configure_faiss_threads",
    "convex",
    "default_embedder",
    "entry_text",
    "facts_about",
    "get_bm25_variant",
    "get_embedder",
    "known_lenses",
    "load_snapshot",
    "minmax",
    "mmr",
    "register_bm25_variant",
    "register_embedder",
    "register_lens",
    "resolve_periods",
    "rrf",
    "save_snapshot",
]


def __getattr__(name: str) -> Any:
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module 'retrieval' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
