"""Embedders: the protocol, the registry and the built-in implementations."""

from __future__ import annotations

from .base import (
    Embedder,
    EmbedderUnavailable,
    default_embedder,
    get_embedder,
    known_embedders,
    l2_normalise,
    load_default_embedder,
    register_embedder,
)
from .fastembed import DEFAULT_FASTEMBED_MODEL, FastEmbedEmbedder
from .hashing import HashingEmbedder
from .minilm import MINILM_NAME, MiniLMEmbedder, minilm_available
from .openai import EmbeddingServiceError, OpenAIEmbedder
from .static import STATIC_NAME, StaticEmbedder

__all__ = [
    "DEFAULT_FASTEMBED_MODEL",
    "MINILM_NAME",
    "STATIC_NAME",
    "Embedder",
    "EmbedderUnavailable",
    "EmbeddingServiceError",
    "FastEmbedEmbedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "StaticEmbedder",
    "default_embedder",
    "get_embedder",
    "known_embedders",
    "l2_normalise",
    "load_default_embedder",
    "minilm_available",
    "register_embedder",
]

_HASHING = HashingEmbedder()
register_embedder("hashing", HashingEmbedder)
register_embedder(_HASHING.name, HashingEmbedder)
register_embedder(MINILM_NAME, MiniLMEmbedder)
register_embedder("minilm", lambda: get_embedder(MINILM_NAME))
# optional (the fastembed extra); the factory raises EmbedderUnavailable without it
register_embedder("fastembed", FastEmbedEmbedder)
