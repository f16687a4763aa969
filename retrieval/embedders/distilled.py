"""MiniLM's vocabulary distilled through the model: the first pass's token table.

The input layer's word vectors (:mod:`.static`) say what a token looks like before the
model has read it. Each word token of the vocabulary (ids from
:data:`~.static.FIRST_WORD`) is instead run through MiniLM alone, as ``[CLS] token
[SEP]``, and its own output vector kept: what the model makes of the word, as Model2Vec
distils a sentence model into static vectors. Pooled with the same Zipf weights, these
rank what the model has not embedded yet nearer to how the model will (what may count as a
match at all is still decided on the input layer's rows:
:meth:`.static.StaticEmbedder.embed_with_floor`). LoCoMo dev,
in-process engine, every turn with only its first-pass vector, hybrid R@10 (conversations
1-3 / 4-5): ``add_messages`` 0.7723 (0.7731 / 0.7715) -> 0.7793 (0.7842 / 0.7743); one plain
``store`` per turn 0.6124 (0.6171 / 0.6076) -> 0.6269 (0.6349 / 0.6188). Left out, as they
lost on a half or an API: the rows centred (0.7814 / 0.6180), PCA to 256 (0.7793 / 0.6177),
the mean over ``[CLS]`` and ``[SEP]`` too (0.7775 / 0.6272), distilled and input rows
summed (0.7736 / 0.6222).

The table ships with the package (:data:`DISTILLED`: int8 with a scale per row, as the
model's own input table is), made by

    python -m retrieval.embedders.distilled [--out PATH]

from the model file whose sha256 it records (~25 s on 2 cores). Another model file (one
``RB_MINILM_MODEL`` names) does not match it and keeps the input layer's table: one model's
distilled rows mean nothing to another.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .static import FIRST_WORD

if TYPE_CHECKING:
    from .minilm import MiniLMEmbedder

__all__ = ["DISTILLED", "distil", "load_distilled", "model_digest", "save_distilled"]

log = logging.getLogger(__name__)

DISTILLED = Path(__file__).resolve().parent / "data" / "minilm-distilled.npz"
#: Tokens per model run (each a 3-token window: [CLS] token [SEP]).
BATCH = 512


def model_digest(data: bytes) -> str:
    """The sha256 (hex) of a model file's bytes: what a distilled table is made from."""
    return hashlib.sha256(data).hexdigest()


def distil(model: MiniLMEmbedder, vocab_size: int, first: int = FIRST_WORD,
           progress: Callable[[int, int], None] | None = None) -> npt.NDArray[np.float32]:
    """The output vector of each token id ``first`` .. ``vocab_size - 1`` run alone through
    ``model``, float32 ``(vocab_size - first, dim)``; ``progress(done, total)`` after each
    run."""
    ids = np.arange(first, vocab_size, dtype=np.int64)
    out = np.zeros((len(ids), model.dim), np.float32)
    for at in range(0, len(ids), BATCH):
        out[at : at + BATCH] = model.token_vectors(ids[at : at + BATCH])
        if progress is not None:
            progress(min(at + BATCH, len(ids)), len(ids))
    return out


def save_distilled(path: Path, rows: npt.NDArray[np.float32], digest: str,
                   first: int = FIRST_WORD) -> None:
    """Write ``rows`` (token ids from ``first``) as int8 with a scale per row, with the
    model's ``digest``."""
    scale = np.maximum(np.abs(rows).max(axis=1), 1e-12) / 127.0
    q = np.round(rows / scale[:, None]).astype(np.int8)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as f:
        np.savez_compressed(f, q=q, scale=scale.astype(np.float32), first=np.int64(first),
                            digest=np.str_(digest))
    tmp.replace(path)


def load_distilled(path: Path, digest: str, vocab_size: int
                   ) -> tuple[int, npt.NDArray[np.float32]] | None:
    """(first token id, float32 rows) of the table at ``path`` when it was made from the
    model of ``digest`` and fits its ``vocab_size``; else None (logged, but for a missing
    file)."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            made_from, first = str(z["digest"]), int(z["first"])
            if made_from != digest:
                log.info("%s was distilled from another model file (sha256 %s…, this one "
                         "%s…): the first pass uses the input layer's table", path.name,
                         made_from[:12], digest[:12])
                return None
            q, scale = z["q"], z["scale"]
    except (OSError, ValueError, KeyError) as exc:
        log.warning("%s unreadable (%s): the first pass uses the input layer's table", path,
                    exc)
        return None
    if first + len(q) != vocab_size:
        log.warning("%s holds %d rows from id %d, the model's vocabulary %d: not used", path,
                    len(q), first, vocab_size)
        return None
    return first, q.astype(np.float32) * scale[:, None]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--out", type=Path, default=DISTILLED, help=f"default {DISTILLED}")
    a = ap.parse_args(argv)
    from .minilm import MiniLMEmbedder, _model_file, minilm_available

    missing = minilm_available()
    model_file = _model_file()
    if missing or model_file is None:
        print(f"error: MiniLM: {missing}", file=sys.stderr)
        return 2
    data = model_file.read_bytes()
    from .static import SCALE, onnx_initializers

    vocab_size = len(onnx_initializers(data, {SCALE})[SCALE])
    model = MiniLMEmbedder()
    t0 = time.perf_counter()

    tty = sys.stderr.isatty()
    shown = [0]

    def say(done: int, total: int) -> None:
        line = f"distilling {done:,} / {total:,} tokens ({time.perf_counter() - t0:.0f} s)"
        if tty:  # one line, rewritten; piped: a plain line a tenth of the way
            print(f"\r{line}", end="\n" if done == total else "", file=sys.stderr, flush=True)
        elif done == total or done * 10 // total > shown[0]:
            shown[0] = done * 10 // total
            print(line, file=sys.stderr, flush=True)

    rows = distil(model, vocab_size, progress=say)
    save_distilled(a.out, rows, model_digest(data))
    print(f"{a.out}: {len(rows):,} token vectors from {model_file.name} "
          f"({a.out.stat().st_size / 1e6:.1f} MB, {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
