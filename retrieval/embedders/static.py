"""A first-pass embedding in microseconds: MiniLM's static token vectors, pooled.

One 384-d vector per WordPiece token: the words' rows distilled through the model
(:mod:`.distilled`, shipped for the model file it was made from), else the model's own
input layer (the ONNX file's ``word_embeddings`` initializer, int8 with a scale per row).
A text's first-pass vector is the weighted mean of its tokens' rows, L2-normalised: no
model run, so an entry is searchable by (rough) meaning the moment it is indexed, while its
full vector waits for the model. Weights follow Zipf: the vocabulary lists whole words
roughly by frequency after its single characters, so a token's rank stands in for its
frequency and ``log(1 + rank)`` weighs rare words up and "the", "of" down (characters,
punctuation and special tokens: 0).

The first-pass vectors live in their own space (:data:`STATIC_NAME`): their cosines are
never compared with the full model's. Measured on the LoCoMo dev split (in-process engine,
every turn with only its first-pass vector, queries likewise; hybrid R@10 against BM25
alone): conversational entries 0.746 -> 0.772 with the input layer's rows, 0.779 distilled;
plain one-turn entries 0.569 -> 0.611, 0.627 distilled; on both halves of the split
(README, "At once and settled")."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .base import EmbedderUnavailable, Vectors, l2_normalise

__all__ = ["STATIC_NAME", "StaticEmbedder", "onnx_initializers", "pooled", "zipf_weights"]

STATIC_NAME = "all-MiniLM-L6-v2-static-zipf"
#: The initializers of the word-embedding table in the int8 ONNX file.
TABLE = "inner.embeddings.word_embeddings.weight_q"
SCALE = "inner.embeddings.word_embeddings.weight_scale"
#: bert-base-uncased's vocabulary: ids below this are padding, unused slots, [CLS]/[SEP],
#: single characters and punctuation; from it on, words by frequency ("the" first).
FIRST_WORD = 1996
_DTYPES = {1: np.float32, 3: np.int8, 7: np.int64}


def _varint(b: bytes | memoryview, i: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        c = b[i]
        i += 1
        out |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return out, i


def _fields(b: bytes | memoryview, start: int, end: int) -> Iterator[tuple[int, Any]]:
    """Protocol-buffer fields of ``b[start:end]``: (number, value): an int for a varint,
    (start, end) of the payload for a length-delimited field, None for fixed widths."""
    i = start
    while i < end:
        key, i = _varint(b, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(b, i)
            yield num, v
        elif wire == 2:
            n, i = _varint(b, i)
            yield num, (i, i + n)
            i += n
        elif wire in (1, 5):
            yield num, None
            i += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def onnx_initializers(data: bytes, names: set[str]) -> dict[str, npt.NDArray[Any]]:
    """The initializers ``names`` of an ONNX model (its serialised ``ModelProto``) as
    arrays, read with no ONNX package: ModelProto.graph (7) -> GraphProto.initializer (5)
    -> TensorProto dims (1), data_type (2), name (8), raw_data (9). Only raw-data tensors
    of float32, int8 and int64 are read."""
    out: dict[str, npt.NDArray[Any]] = {}
    mv = memoryview(data)
    for num, span in _fields(mv, 0, len(mv)):
        if num != 7 or span is None:
            continue
        for gnum, tspan in _fields(mv, *span):
            if gnum != 5:
                continue
            dims: list[int] = []
            dtype = name = raw = None
            for tnum, v in _fields(mv, *tspan):
                if tnum == 1 and isinstance(v, int):
                    dims.append(v)
                elif tnum == 1 and v is not None:  # packed dims
                    j = v[0]
                    while j < v[1]:
                        d, j = _varint(mv, j)
                        dims.append(d)
                elif tnum == 2:
                    dtype = v
                elif tnum == 8:
                    name = bytes(mv[v[0]:v[1]]).decode()
                elif tnum == 9:
                    raw = v
            if name in names and raw is not None and dtype in _DTYPES:
                arr = np.frombuffer(mv[raw[0]:raw[1]], dtype=_DTYPES[dtype])
                out[name] = arr.reshape(dims).copy()
    return out


def zipf_weights(vocab_size: int, first_word: int = FIRST_WORD) -> npt.NDArray[np.float32]:
    """Per token id: ``log(1 + rank)`` with rank counted from ``first_word`` (the most
    frequent word has rank 1 and weight log 2); ids before it weigh 0."""
    rank = np.arange(vocab_size, dtype=np.float64) - (first_word - 1)
    return np.where(rank > 0, np.log1p(np.maximum(rank, 0.0)), 0.0).astype(np.float32)


def wordless_ids(vocab: dict[str, int], size: int) -> npt.NDArray[np.int64]:
    """The ids of tokens with a digit: out of context a number means nothing, and the
    static table puts them close together, so an id, a hash or a count ("zebracorn69f8d1")
    met every number-heavy text (a belief's bookkeeping) at cosine 0.4 - 0.5, above the
    first-pass floor (0.09 - 0.17 without them). LoCoMo dev at once: R@10 0.7725 -> 0.7723
    (halves 0.7725 / 0.7724 -> 0.7731 / 0.7715)."""
    bad = [i for tok, i in vocab.items() if i < size and (
        any(c.isdigit() for c in tok))]
    return np.asarray(sorted(bad), np.int64)


def pooled(token_ids: Sequence[Sequence[int]], table: npt.NDArray[np.floating[Any]],
           weights: npt.NDArray[np.float32]) -> Vectors:
    """Per text (its token ids), the ``weights``-weighted sum of its ``table`` rows,
    L2-normalised, float32 ``(len(token_ids), dim)``; a text of weightless tokens gets a
    zero row (it has no first-pass meaning, and ranks by BM25)."""
    out = np.zeros((len(token_ids), table.shape[1]), np.float32)
    for i, ids in enumerate(token_ids):
        if len(ids):
            a = np.asarray(ids, np.int64)
            out[i] = weights[a] @ table[a]
    return l2_normalise(out)


class StaticEmbedder:
    """Texts to first-pass vectors (:data:`STATIC_NAME`, 384-d) from the word-embedding
    table of MiniLM's ONNX file and its tokenizer (both loaded on first use, ~0.3 s).
    ``source``: a zero-argument callable giving (the model file, a loaded tokenizer)."""

    name = STATIC_NAME
    dim = 384

    def __init__(self, source: Any) -> None:
        self._source = source
        self._lock = threading.Lock()
        self._table: npt.NDArray[np.float32] | None = None
        self._weights: npt.NDArray[np.float32] | None = None
        self._tokenizer: Any = None
        #: whether the table is :mod:`.distilled`'s (else the input layer's); set on load
        self.distilled = False
        #: the input layer's rows when the table is distilled: the relevance floor's space
        self._floor_table: npt.NDArray[np.float16] | None = None

    def _load(self) -> None:
        with self._lock:
            if self._table is not None:
                return
            # imported here: .distilled takes FIRST_WORD from this module
            from .distilled import DISTILLED, load_distilled, model_digest

            model, tokenizer = self._source()
            data = Path(model).read_bytes()
            got = onnx_initializers(data, {TABLE, SCALE})
            if TABLE not in got or SCALE not in got:
                raise EmbedderUnavailable(f"{model}: no int8 word-embedding table found")
            table = got[TABLE].astype(np.float32) * got[SCALE].astype(np.float32)
            # The words' rows distilled through this very model when shipped for it
            # (below FIRST_WORD every weight is 0, so those rows never count).
            distilled = load_distilled(DISTILLED, model_digest(data), len(table))
            if distilled is not None:
                first, rows = distilled
                self._floor_table = table.astype(np.float16)  # half the memory: a floor
                table[first:] = rows
            self.distilled = distilled is not None
            weights = zipf_weights(len(table))
            weights[wordless_ids(tokenizer.get_vocab(), len(table))] = 0.0
            self._weights = weights
            self._tokenizer = tokenizer
            self._table = table

    def embed(self, texts: list[str]) -> Vectors:
        """float32 ``(len(texts), 384)``, unit rows (zero for a text of no word)."""
        return self.embed_with_floor(texts)[0]

    def embed_with_floor(self, texts: list[str]) -> tuple[Vectors, Vectors | None]:
        """The first-pass vectors of ``texts`` (:meth:`embed`), and those the relevance
        floor is taken on: the input layer's when the table is distilled, else None (the
        same vectors).

        Why two: a transformer's outputs share a direction, so in the distilled space any
        two texts meet at cosine 0.3 - 0.5 and a nonsense word ("zebracorn69f8d1") met
        every LoCoMo turn above a real query's best (0.51 against 0.32 for "payment
        terms"); with the shared direction taken out, a word that means something to the
        model ("zebra") still met a text as closely as weakly related pairs do (0.22 - 0.29
        against 0.25 - 0.30). The input layer's rows keep them apart (nonsense 0.09 - 0.17,
        "when is the bill due" / "Acme pays its invoices" 0.30): they decide what may
        count as a match, the distilled rows how it ranks."""
        if self._table is None:
            self._load()
        assert self._table is not None and self._weights is not None
        if not texts:
            empty = np.zeros((0, self.dim), np.float32)
            return empty, (empty if self._floor_table is not None else None)
        ids = [enc.ids[1:-1] for enc in self._tokenizer.encode_batch(texts)]  # no CLS/SEP
        floor = (pooled(ids, self._floor_table, self._weights)
                 if self._floor_table is not None else None)
        return pooled(ids, self._table, self._weights), floor
