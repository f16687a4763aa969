"""FastEmbed (Qdrant's ONNX embedding library) as an optional embedder.

For users who can download models: ``pip install 'reactive-blackboard[fastembed]'``, then
``FastEmbedEmbedder("BAAI/bge-small-en-v1.5")`` or ``get_embedder("fastembed")``. The model
is fetched into FastEmbed's cache on first use; with ``HF_HUB_OFFLINE=1`` (or
``local_files_only=True``) only an already cached model loads. Nothing here runs until
first used, so the import costs nothing when the package is absent.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .base import EmbedderUnavailable, Vectors, l2_normalise

__all__ = ["DEFAULT_FASTEMBED_MODEL", "FastEmbedEmbedder"]

DEFAULT_FASTEMBED_MODEL = "BAAI/bge-small-en-v1.5"
_INSTALL = "pip install 'reactive-blackboard[fastembed]'"


def _text_embedding() -> Any:
    try:
        from fastembed import TextEmbedding  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise EmbedderUnavailable(f"FastEmbed is not installed ({exc}); {_INSTALL}") from exc
    return TextEmbedding


def _dimension(model: str) -> int:
    """The model's vector size from FastEmbed's model list (no download)."""
    for m in _text_embedding().list_supported_models():
        if m.get("model") == model:
            return int(m["dim"])
    raise EmbedderUnavailable(f"FastEmbed does not know the model {model!r}")


class FastEmbedEmbedder:
    """Unit vectors from a FastEmbed text model; ``name`` is ``fastembed:<model>``.

    ``cache_dir``, ``threads`` and ``local_files_only`` are passed to FastEmbed. The model
    loads on the first :meth:`embed`; a model that cannot be had (offline, not cached)
    raises :class:`EmbedderUnavailable` saying so.
    """

    def __init__(
        self, model: str = DEFAULT_FASTEMBED_MODEL, *, cache_dir: str | None = None,
        threads: int | None = None, local_files_only: bool = False, batch_size: int = 64,
    ) -> None:
        self.model = model
        self.name = f"fastembed:{model}"
        self.dim = _dimension(model)
        self.batch_size = batch_size
        self._kwargs: dict[str, Any] = {"cache_dir": cache_dir, "threads": threads,
                                        "local_files_only": local_files_only}
        self._lock = threading.Lock()
        self._impl: Any = None

    def _load(self) -> Any:
        with self._lock:
            if self._impl is None:
                cls = _text_embedding()
                try:
                    self._impl = cls(model_name=self.model, **self._kwargs)
                except Exception as exc:  # FastEmbed raises many kinds (network, files)
                    raise EmbedderUnavailable(
                        f"FastEmbed could not load {self.model!r} ({type(exc).__name__}: "
                        f"{exc}); it downloads models on first use: allow that, or point "
                        "cache_dir at a copy"
                    ) from exc
            return self._impl

    def embed(self, texts: list[str]) -> Vectors:
        """float32 ``(len(texts), dim)``, rows L2-normalised."""
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        impl = self._impl or self._load()
        out = np.stack(list(impl.embed(texts, batch_size=self.batch_size)))
        return l2_normalise(out)
