"""The query layer: query model, lenses, embedders, dense and BM25 indexes, fusion, the
in-process search engine, the Redis index follower and the retriever behind
``AgentMemory.recall``. Imports only :mod:`blackboard`. Exported here: what an application
uses (the query model, the retrievers, engine and follower, embedders, lenses, BM25 variants,
the query rewriter); the indexes, fusion maths, snapshots and text helpers are imported
from their modules.

Names load lazily (PEP 562): ``import memory`` pulls in the query model without paying for
FAISS, bm25s and numpy until an index is built.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bm25_variants import BM25Params, BM25Variant, register_bm25_variant
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
    from .engine import SearchEngine
    from .follower import IndexFollower
    from .goal import RetrievalContext
    from .lens import LensPreset, UnknownLens, known_lenses, register_lens
    from .query import MemoryQuery, RecallOrder, TagFilter
    from .recall import Retriever
    from .rewrite import LLMQueryRewriter
    from .scoring import ScoredEntry, ScoringConfig
    from .structured import StructuredRetriever

_WHERE = {
    "BM25Params": "bm25_variants",
    "BM25Variant": "bm25_variants",
    "register_bm25_variant": "bm25_variants",
    "Embedder": "embedders",
    "EmbedderUnavailable": "embedders",
    "FastEmbedEmbedder": "embedders",
    "HashingEmbedder": "embedders",
    "MiniLMEmbedder": "embedders",
    "OpenAIEmbedder": "embedders",
    "default_embedder": "embedders",
    "get_embedder": "embedders",
    "register_embedder": "embedders",
    "SearchEngine": "engine",
    "IndexFollower": "follower",
    "RetrievalContext": "goal",
    "LensPreset": "lens",
    "UnknownLens": "lens",
    "known_lenses": "lens",
    "register_lens": "lens",
    "MemoryQuery": "query",
    "RecallOrder": "query",
    "TagFilter": "query",
    "Retriever": "recall",
    "LLMQueryRewriter": "rewrite",
    "ScoredEntry": "scoring",
    "ScoringConfig": "scoring",
    "StructuredRetriever": "structured",
}

__all__ = [
    "BM25Params",
    "BM25Variant",
    "Embedder",
    "EmbedderUnavailable",
    "FastEmbedEmbedder",
    "HashingEmbedder",
    "IndexFollower",
    "LLMQueryRewriter",
    "LensPreset",
    "MemoryQuery",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "RecallOrder",
    "RetrievalContext",
    "Retriever",
    "ScoredEntry",
    "ScoringConfig",
    "SearchEngine",
    "StructuredRetriever",
    "TagFilter",
    "UnknownLens",
    "default_embedder",
    "get_embedder",
    "known_lenses",
    "register_bm25_variant",
    "register_embedder",
    "register_lens",
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
