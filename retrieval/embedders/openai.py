"""An embedder for any OpenAI-compatible ``POST /v1/embeddings`` endpoint (httpx, sync)."""

from __future__ import annotations

import random
import time

import httpx
import numpy as np

from .base import EmbedderUnavailable, Vectors, l2_normalise

__all__ = ["EmbeddingServiceError", "OpenAIEmbedder"]

_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class EmbeddingServiceError(EmbedderUnavailable):
    """The embedding endpoint failed after the retries, or answered malformed data."""


class OpenAIEmbedder:
    """Vectors from ``{base_url}/embeddings`` (``base_url`` usually ends in ``/v1``).

    ``timeout`` is seconds per request; a connection error, a timeout or a 408/429/5xx is
    retried up to ``retries`` times with exponential backoff (``backoff * 2**attempt``
    seconds, jittered, capped at ``max_backoff``; ``Retry-After`` is honoured). Texts go in
    batches of ``batch_size``. Vectors are re-normalised, since not every server does.
    """

    def __init__(
        self,
        model: str,
        dim: int,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        batch_size: int = 256,
        client: httpx.Client | None = None,
    ) -> None:
        self.model = model
        self.dim = dim
        self.name = f"openai:{model}:{dim}"
        self.url = base_url.rstrip("/") + "/embeddings"
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.batch_size = batch_size
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.Client(timeout=timeout, headers=headers)

    def close(self) -> None:
        self._client.close()

    def _delay(self, attempt: int, resp: httpx.Response | None) -> float:
        if resp is not None:
            ra = resp.headers.get("retry-after")
            if ra:
                try:
                    return min(float(ra), self.max_backoff)
                except ValueError:
                    pass
        base = min(self.backoff * (2**attempt), self.max_backoff)
        return base * (0.5 + random.random() / 2)

    def _post(self, texts: list[str]) -> Vectors:
        body: dict[str, object] = {"model": self.model, "input": texts}
        last: str = ""
        for attempt in range(self.retries + 1):
            resp: httpx.Response | None = None
            try:
                resp = self._client.post(self.url, json=body)
                if resp.status_code == 200:
                    return self._parse(resp, len(texts))
                last = f"HTTP {resp.status_code}: {resp.text[:200]}"
                if resp.status_code not in _RETRY_STATUS:
                    break
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            if attempt < self.retries:
                time.sleep(self._delay(attempt, resp))
        raise EmbeddingServiceError(f"embedding request to {self.url} failed: {last}")

    def _parse(self, resp: httpx.Response, n: int) -> Vectors:
        try:
            data = resp.json()["data"]
            rows = sorted(data, key=lambda d: int(d["index"]))
            vecs = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingServiceError(f"malformed embeddings response: {exc}") from exc
        if vecs.shape != (n, self.dim):
            raise EmbeddingServiceError(
                f"expected {n} vectors of dim {self.dim}, got shape {vecs.shape}"
            )
        return l2_normalise(vecs)

    def embed(self, texts: list[str]) -> Vectors:
        """float32 ``(len(texts), dim)``, rows L2-normalised."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._post(texts[i : i + self.batch_size])
            for i in range(0, len(texts), self.batch_size)
        ]
        return np.concatenate(parts, axis=0)
