"""The embedder protocol and the process-wide registry of embedders."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from blackboard import BlackboardError, InvalidArgument

__all__ = [
    "Embedder",
    "EmbedderUnavailable",
    "default_embedder",
    "get_embedder",
    "known_embedders",
    "l2_normalise",
    "load_default_embedder",
    "register_embedder",
]

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]


class EmbedderUnavailable(BlackboardError, ImportError):
    """An embedder's optional dependency or model file is missing; the message says what to
    install."""


@runtime_checkable
class Embedder(Protocol):
    """Text to unit vectors.

    ``embed`` returns float32 of shape ``(len(texts), dim)``, each row L2-normalised (a zero
    row only for a text with no features). ``name`` identifies the vector space: vectors
    are only ever compared with vectors of the same ``name``.
    """

    name: str
    dim: int

    def embed(self, texts: list[str]) -> Vectors: ...


def l2_normalise(x: npt.NDArray[np.floating]) -> Vectors:
    """Rows of ``x`` (shape ``(n, dim)``) scaled to unit norm, as float32; zero rows stay 0."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0).astype(np.float32)


EmbedderFactory = Callable[[], Embedder]

_lock = threading.Lock()
_factories: dict[str, EmbedderFactory] = {}
_instances: dict[str, Embedder] = {}
_warned = False


def register_embedder(name: str, factory: EmbedderFactory, *, replace: bool = False) -> None:
    """Register a zero-argument factory; the instance is created on first ``get_embedder``."""
    with _lock:
        if name in _factories and not replace:
            raise InvalidArgument(f"embedder {name!r} is already registered")
        _factories[name] = factory
        _instances.pop(name, None)


def known_embedders() -> list[str]:
    with _lock:
        return sorted(_factories)


def get_embedder(name: str) -> Embedder:
    """The (shared) instance of the embedder registered as ``name``."""
    with _lock:
        inst = _instances.get(name)
        if inst is not None:
            return inst
        factory = _factories.get(name)
    if factory is None:
        raise InvalidArgument(
            f"unknown embedder {name!r}; known embedders: {', '.join(known_embedders())}"
        )
    inst = factory()
    with _lock:
        return _instances.setdefault(name, inst)


def default_embedder() -> Embedder | None:
    """MiniLM (int8 ONNX) when its dependencies are installed, else ``None``.

    ``None`` tells the caller to rank by BM25 alone; that is logged once per process, with
    what to install.
    """
    global _warned
    from .minilm import MINILM_NAME, minilm_available

    missing = minilm_available()
    if missing is None:
        return get_embedder(MINILM_NAME)
    with _lock:
        first, _warned = not _warned, True
    if first:
        log.warning(
            "semantic recall disabled, ranking by BM25 only: %s "
            "(pip install 'reactive-blackboard[semantic]')",
            missing,
        )
    return None


def load_default_embedder() -> float | None:
    """Load the default embedder's model now, in this thread (it loads on first use
    otherwise): the seconds that took, None without one. A process about to recall runs
    this in a thread while it does other work, so the first query does not wait for it."""
    t0 = time.perf_counter()
    emb = default_embedder()
    if emb is None:
        return None
    emb.embed(["load"])
    return time.perf_counter() - t0
