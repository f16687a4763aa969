"""First-pass vectors (issue 31 item 1): the static token vectors of MiniLM's input layer,
pooled (:mod:`retrieval.embedders.static`), ranking what the model has not embedded yet,
in their own index, replaced when the full vector arrives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from recall_support import CountingEmbedder

from blackboard import Entry
from retrieval import MemoryQuery, ScoringConfig, SearchEngine
from retrieval.embedders import HashingEmbedder, minilm_available
from retrieval.embedders.static import onnx_initializers, pooled, zipf_weights
from retrieval.ranking import _fused


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(num: int, payload: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _tensor(name: str, arr: npt.NDArray[np.generic], dtype: int, packed: bool) -> bytes:
    dims = (_field(1, b"".join(_varint(d) for d in arr.shape)) if packed
            else b"".join(_varint(1 << 3) + _varint(d) for d in arr.shape))
    return (dims + _varint(2 << 3) + _varint(dtype) + _field(8, name.encode())
            + _varint(13 << 3 | 5) + b"\0\0\0\0"  # a fixed-width field, skipped
            + _field(9, arr.tobytes()))


def test_onnx_initializers_read_without_onnx() -> None:
    q = np.arange(-6, 6, dtype=np.int8).reshape(4, 3)
    s = np.asarray([[0.5], [1.0], [2.0], [4.0]], np.float32)
    node = _field(4, b"Gather")
    graph = (_field(1, node) + _field(5, _tensor("table", q, 3, packed=True))
             + _field(5, _tensor("scale", s, 1, packed=False))
             + _field(5, _tensor("other", s, 1, packed=True)))
    model = _varint(1 << 3) + _varint(8) + _field(7, graph)  # ir_version, graph
    got = onnx_initializers(model, {"table", "scale"})
    assert set(got) == {"table", "scale"}
    assert np.array_equal(got["table"], q) and np.array_equal(got["scale"], s)


def test_zipf_weights() -> None:
    w = zipf_weights(10, first_word=4)
    assert np.all(w[:4] == 0)  # specials, characters, punctuation
    assert w[4] == pytest.approx(np.log(2)) and np.all(np.diff(w[4:]) > 0)


def test_pooled_is_the_weighted_mean_normalised() -> None:
    table = np.asarray([[1, 0], [0, 1], [1, 1], [3, 4]], np.float32)
    weights = np.asarray([0, 1, 2, 0], np.float32)
    got = pooled([[1, 2], [0, 3], []], table, weights)
    want = np.asarray([2, 3], np.float32)  # 1 * [0, 1] + 2 * [1, 1]
    assert np.allclose(got[0], want / np.linalg.norm(want))
    assert np.all(got[1:] == 0)  # weightless tokens, no tokens: no first-pass meaning


def test_fusion_scales_each_space_over_its_own_rows() -> None:
    dense = np.asarray([0.8, 0.4, np.nan, np.nan])
    static = np.asarray([0.1, np.nan, 0.9, 0.7])  # row 0's first pass is ignored: it has a vector
    bm25 = np.zeros(4)
    fused = _fused(dense, bm25, MemoryQuery(query="x", alpha=1.0), ScoringConfig(), static)
    assert fused.tolist() == [1.0, 0.0, 1.0, 0.0]
    alone = _fused(dense, bm25, MemoryQuery(query="x", alpha=1.0), ScoringConfig())
    assert alone.tolist() == [1.0, 0.0, 0.0, 0.0]


class WithFirstPass(CountingEmbedder):
    """A full embedder whose first pass is another (hashing) space."""

    def first_pass(self) -> HashingEmbedder:
        return HashingEmbedder(dim=64)


def test_engine_ranks_waiting_entries_by_first_pass_until_their_vector() -> None:
    eng = SearchEngine(WithFirstPass(), inline_embed=0)
    eng.add([Entry(id=f"s:a-{i}", scope="s:a", value=f"note {i} about tulips in the garden")
             for i in range(5)], embed_now=False)
    hits = eng.mark_vectors(eng.search(MemoryQuery(query="tulips garden", max_results=3)), True)
    assert hits and all(h.has_first_pass and not h.has_vector for h in hits)
    cat = eng._scopes["s:a"]
    assert cat.static is not None and len(cat.static) == 5
    eng.flush_embeddings()  # the full vectors replace the first pass
    assert len(cat.static) == 0 and not cat.has_static.a[:5].any()
    hits = eng.mark_vectors(eng.search(MemoryQuery(query="tulips garden", max_results=3)), True)
    assert all(h.has_vector and not h.has_first_pass for h in hits)
    eng.remove(["s:a-0"])
    assert len(eng._scopes["s:a"]) == 4


def test_a_long_text_waits_for_its_vector_without_a_first_pass() -> None:
    """A text longer than ``long_message_chars`` (a message's own text, or a plain
    entry's) gets no first-pass row: its pooled static vector meets every query. It ranks
    by BM25 until its vector arrives; a short one by first pass meanwhile."""
    long_answer = "tulips in the garden need " + "water and light and care " * 30
    msg = {"kind": "message", "speaker": "Assistant", "text": long_answer,
           "session": "s1", "position": 1}
    entries = [Entry(id="s:a-short", scope="s:a", value="tulips in the garden bloom"),
               Entry(id="s:a-long", scope="s:a", value=long_answer),
               Entry(id="s:a-msg", scope="s:a", value=msg)]
    eng = SearchEngine(WithFirstPass(), inline_embed=0)
    eng.add(entries, embed_now=False)
    cat = eng._scopes["s:a"]
    assert cat.static is not None and len(cat.static) == 1
    hits = eng.mark_vectors(eng.search(MemoryQuery(query="tulips garden", max_results=3)), True)
    assert {h.entry.id: h.has_first_pass for h in hits} == {
        "s:a-short": True, "s:a-long": False, "s:a-msg": False}
    off = SearchEngine(WithFirstPass(), ScoringConfig(long_message_chars=0), inline_embed=0)
    off.add(entries, embed_now=False)  # 0: no limit
    assert len(off._scopes["s:a"].static) == 3  # type: ignore[arg-type]


def test_tokens_with_a_digit_carry_no_first_pass_weight() -> None:
    """Numbers mean nothing out of context and sit together in the static table: an id
    such as "zebracorn69f8d1" met every number-heavy text above the floor."""
    from retrieval.embedders.static import wordless_ids

    vocab = {"[PAD]": 0, "cat": 1, "69": 2, "##8": 3, "##f": 4, "2023": 5, "out": 9}
    assert wordless_ids(vocab, 8).tolist() == [2, 3, 5]  # "out" (9) is past the table

def test_a_distilled_table_round_trips_and_only_for_its_own_model(tmp_path: Path) -> None:
    from retrieval.embedders.distilled import load_distilled, save_distilled

    rows = np.random.default_rng(7).normal(size=(10, 8)).astype(np.float32)
    path = tmp_path / "t.npz"
    save_distilled(path, rows, "abc", first=5)
    first, got = load_distilled(path, "abc", 15) or (None, None)
    assert first == 5 and got is not None and got.shape == rows.shape
    step = np.abs(rows).max(axis=1, keepdims=True) / 127.0
    assert np.all(np.abs(got - rows) <= step / 2 + 1e-7)  # int8 with a scale per row
    assert load_distilled(path, "xyz", 15) is None  # another model's file
    assert load_distilled(path, "abc", 16) is None  # another vocabulary
    assert load_distilled(tmp_path / "none.npz", "abc", 15) is None
    (tmp_path / "bad.npz").write_bytes(b"not a table")
    assert load_distilled(tmp_path / "bad.npz", "abc", 15) is None


@pytest.mark.skipif(minilm_available() is not None, reason="MiniLM not installed")
def test_the_shipped_table_is_the_installed_models_own_distillation() -> None:
    """The package's table was made from the model file installed (its sha256), and its
    rows are what the model makes of each token now (int8 aside); the first pass uses it."""
    from retrieval.embedders import MiniLMEmbedder
    from retrieval.embedders.distilled import DISTILLED, load_distilled, model_digest
    from retrieval.embedders.minilm import _model_file
    from retrieval.embedders.static import FIRST_WORD

    model_file = _model_file()
    assert model_file is not None
    model = MiniLMEmbedder()
    fp = model.first_pass()
    fp.embed(["load"])
    assert fp.distilled
    vocab = len(fp._table)  # type: ignore[arg-type]
    got = load_distilled(DISTILLED, model_digest(model_file.read_bytes()), vocab)
    assert got is not None and got[0] == FIRST_WORD
    ids = np.linspace(FIRST_WORD, vocab - 1, 64).astype(np.int64)
    now = model.token_vectors(ids)
    shipped = got[1][ids - FIRST_WORD]
    cos = (now * shipped).sum(1) / np.linalg.norm(now, axis=1) / np.linalg.norm(shipped, axis=1)
    assert cos.min() > 0.999, cos.min()


@pytest.mark.skipif(minilm_available() is not None, reason="MiniLM not installed")
def test_a_nonsense_word_meets_nothing_while_the_distilled_rows_rank() -> None:
    """The distilled rows rank, the input layer's decide what may count as a match: in the
    distilled space alone "zebracorn…" met every text above a real question's best."""
    from retrieval.embedders import MiniLMEmbedder

    notes = ["Acme pays its invoices net-30", "the office plants need water on Mondays",
             "the quarterly report is due in March", "we moved to Porto last spring",
             "the zoo opens at nine on weekdays"]
    eng = SearchEngine(MiniLMEmbedder(), inline_embed=0)
    assert eng.first_pass is not None
    eng.add([Entry(id=f"s:a-{i}", scope="s:a", value=t) for i, t in enumerate(notes)],
            embed_now=False)
    assert eng.first_pass.distilled  # type: ignore[attr-defined]
    cat = eng._scopes["s:a"]
    assert cat.static_floor is not None and len(cat.static_floor) == len(notes)
    for word in ("zebracorn69f8d1", "zebracornd9e88c", "zebracornffeedd"):
        assert eng.search(MemoryQuery(query=word, max_results=5)) == [], word
    # no word in common with the invoices: found by its first-pass meaning alone
    hits = eng.search(MemoryQuery(query="when is the bill due", max_results=5))
    acme = [h for h in hits if h.entry.id == "s:a-0"]
    assert acme and acme[0].has_first_pass and not acme[0].bm25, hits
    eng.flush_embeddings()  # the full vectors arrive: both first-pass indexes let go
    assert len(cat.static) == 0 and len(cat.static_floor) == 0  # type: ignore[arg-type]
