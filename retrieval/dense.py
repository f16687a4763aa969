"""The dense index: FAISS inner product over L2-normalised float32 vectors with int64 ids.

Flat (exact, ``IndexIDMap2(IndexFlatIP)``) up to ``ivf_threshold`` vectors, then IVF
(``IndexIVFFlat`` with a hashtable direct map, trained on the vectors it holds) after a
:meth:`DenseIndex.rebuild`. Id filters go to FAISS as an ``IDSelectorBatch`` in the search
parameters, so they restrict the candidates before the top-k is taken.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import faiss as _faiss
import numpy as np
import numpy.typing as npt

from blackboard import InvalidArgument

__all__ = ["DenseHits", "DenseIndex", "DenseManifest", "configure_faiss_threads"]

# the faiss stubs lag the SWIG API (SearchParameters kwargs, DirectMap): use it untyped
faiss: Any = _faiss

Ids = npt.NDArray[np.int64]
Vecs = npt.NDArray[np.float32]

_threads_lock = threading.Lock()
_threads_set: int | None = None


def configure_faiss_threads(n: int | None = None) -> int:
    """Set FAISS's OpenMP thread count once per process (later calls are no-ops).

    Default 1 (``RB_FAISS_THREADS`` overrides): recall serves one query vector at a time
    from several threads or tasks; FAISS parallelises a single query over queries, not over
    the database, so more threads buy nothing per query while each calling thread's OpenMP
    pool competes for the same cores (measured in bench/recall.py). Batch jobs that
    rebuild an IVF index may pass a larger ``n`` before any index is created.
    """
    global _threads_set
    with _threads_lock:
        if _threads_set is None:
            want = n if n is not None else int(os.environ.get("RB_FAISS_THREADS", "1"))
            faiss.omp_set_num_threads(max(1, want))
            _threads_set = max(1, want)
        return _threads_set


@dataclass(frozen=True, slots=True)
class DenseHits:
    """Search result: ``ids`` int64 ``(m,)`` and cosine ``scores`` float32 ``(m,)``, best
    first, ``m <= k``."""

    ids: Ids
    scores: Vecs


@dataclass(frozen=True, slots=True)
class DenseManifest:
    """What a snapshot holds; written beside the index file as ``<file>.json``."""

    format: int
    kind: str
    dim: int
    ntotal: int
    embedder: str | None
    sha256: str
    nprobe: int
    ivf_threshold: int


class DenseIndex:
    """Cosine search over unit vectors (shape ``(n, dim)`` float32) keyed by int64 ids.

    Adding an id that is present replaces its vector. All methods are thread-safe.
    """

    def __init__(
        self,
        dim: int,
        *,
        ivf_threshold: int = 200_000,
        nprobe: int = 32,
        embedder: str | None = None,
    ) -> None:
        configure_faiss_threads()
        self.dim = dim
        self.ivf_threshold = ivf_threshold
        self.nprobe = nprobe
        self.embedder = embedder
        self._lock = threading.RLock()
        self._index: Any = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self._ivf = False

    # -- state ---------------------------------------------------------------

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def is_ivf(self) -> bool:
        return self._ivf

    @property
    def needs_rebuild(self) -> bool:
        """Whether the size crossed the flat/IVF threshold the current kind was chosen by."""
        return (len(self) > self.ivf_threshold) != self._ivf

    def _ids(self) -> Ids:
        if self._ivf:
            inv = self._index.invlists
            parts = [
                faiss.rev_swig_ptr(inv.get_ids(i), inv.list_size(i)).copy()
                for i in range(self._index.nlist)
                if inv.list_size(i)
            ]
            return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)
        return faiss.vector_to_array(self._index.id_map).astype(np.int64)

    def ids(self) -> Ids:
        """Every id held, int64 ``(n,)`` (no particular order)."""
        with self._lock:
            return self._ids()

    # -- mutation ------------------------------------------------------------

    def _check(self, ids: npt.ArrayLike, vecs: npt.ArrayLike | None = None) -> tuple[Ids, Vecs]:
        i = np.ascontiguousarray(ids, dtype=np.int64).reshape(-1)
        if vecs is None:
            return i, np.zeros((0, self.dim), np.float32)
        v = np.ascontiguousarray(vecs, dtype=np.float32)
        if v.ndim != 2 or v.shape != (len(i), self.dim):
            raise InvalidArgument(
                f"expected vectors of shape ({len(i)}, {self.dim}), got {v.shape}"
            )
        if len(np.unique(i)) != len(i):
            raise InvalidArgument("duplicate ids in one add")
        return i, v

    def add(self, ids: npt.ArrayLike, vecs: npt.ArrayLike) -> None:
        """Add (or replace) vectors ``vecs`` ``(n, dim)`` under int64 ``ids`` ``(n,)``."""
        i, v = self._check(ids, vecs)
        if not len(i):
            return
        with self._lock:
            self._remove(i)
            self._index.add_with_ids(v, i)

    def remove(self, ids: npt.ArrayLike) -> int:
        """Remove ``ids``; returns how many were present."""
        i, _ = self._check(ids)
        if not len(i):
            return 0
        with self._lock:
            return self._remove(i)

    def _remove(self, ids: Ids) -> int:
        if self._ivf:
            # the hashtable direct map removes only by IDSelectorArray, of present ids
            present = ids[np.isin(ids, self._ids())]
            if not len(present):
                return 0
            return int(self._index.remove_ids(faiss.IDSelectorArray(present)))
        return int(self._index.remove_ids(faiss.IDSelectorBatch(ids)))

    def reconstruct(self, ids: npt.ArrayLike) -> Vecs:
        """The stored vectors of ``ids`` (all must be present), float32 ``(n, dim)``."""
        i, _ = self._check(ids)
        with self._lock:
            if not len(i):
                return np.zeros((0, self.dim), np.float32)
            return np.asarray(self._index.reconstruct_batch(i), dtype=np.float32)

    # -- search --------------------------------------------------------------

    def search(self, query_vec: npt.ArrayLike, k: int, allowed_ids: Ids | None = None) -> DenseHits:
        """Top-``k`` ids by cosine with ``query_vec`` ``(dim,)``, among ``allowed_ids`` only
        (``None``: all)."""
        q = np.ascontiguousarray(query_vec, dtype=np.float32).reshape(1, self.dim)
        empty = DenseHits(np.zeros(0, np.int64), np.zeros(0, np.float32))
        with self._lock:
            n = len(self)
            if k <= 0 or n == 0 or (allowed_ids is not None and len(allowed_ids) == 0):
                return empty
            params: Any = None
            sel: Any = None
            if allowed_ids is not None:
                sel = faiss.IDSelectorBatch(np.ascontiguousarray(allowed_ids, dtype=np.int64))
                k = min(k, len(allowed_ids))
            k = min(k, n)
            if self._ivf:
                params = faiss.SearchParametersIVF(sel=sel, nprobe=self.nprobe)
            elif sel is not None:
                params = faiss.SearchParameters(sel=sel)
            d, lab = self._index.search(q, k, params=params)
        keep = lab[0] >= 0
        return DenseHits(lab[0][keep].astype(np.int64), d[0][keep].astype(np.float32))

    def scores_for(self, query_vec: npt.ArrayLike, ids: Ids) -> Vecs:
        """Cosine of ``query_vec`` with each of ``ids`` (all present), float32 ``(n,)``."""
        q = np.asarray(query_vec, dtype=np.float32).reshape(self.dim)
        return self.reconstruct(ids) @ q

    # -- kind switch -----------------------------------------------------------

    def rebuild(self, *, force_ivf: bool | None = None) -> None:
        """Rebuild as IVF past ``ivf_threshold`` (flat below), from the vectors held.

        IVF: ``nlist = 4 * sqrt(n)`` lists, trained on up to 64 vectors per list.
        """
        with self._lock:
            ids = self._ids()
            vecs = self.reconstruct(ids) if len(ids) else np.zeros((0, self.dim), np.float32)
            want_ivf = len(ids) > self.ivf_threshold if force_ivf is None else force_ivf
            if want_ivf and len(ids):
                nlist = max(1, min(len(ids) // 8, int(4 * math.sqrt(len(ids)))))
                quant = faiss.IndexFlatIP(self.dim)
                ivf = faiss.IndexIVFFlat(quant, self.dim, nlist, faiss.METRIC_INNER_PRODUCT)
                rng = np.random.default_rng(0)
                sample = vecs[rng.permutation(len(vecs))[: nlist * 64]]
                ivf.train(sample)
                ivf.set_direct_map_type(faiss.DirectMap.Hashtable)
                ivf.add_with_ids(vecs, ids)
                # the Python object owns the quantiser; keep it alive as long as the index
                self._quantiser = quant
                self._index, self._ivf = ivf, True
            else:
                flat: Any = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))
                if len(ids):
                    flat.add_with_ids(vecs, ids)
                self._index, self._ivf = flat, False

    # -- snapshot ------------------------------------------------------------

    def save(self, path: str | Path) -> DenseManifest:
        """Write the index to ``path`` and its manifest to ``path + '.json'``."""
        p = Path(path)
        tmp = p.with_name(p.name + ".tmp")
        with self._lock:
            faiss.write_index(self._index, str(tmp))
            ntotal = len(self)
            kind = "ivf" if self._ivf else "flat"
        digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
        os.replace(tmp, p)
        man = DenseManifest(
            1, kind, self.dim, ntotal, self.embedder, digest, self.nprobe, self.ivf_threshold
        )
        Path(str(p) + ".json").write_text(json.dumps(asdict(man), indent=2))
        return man

    @classmethod
    def load(cls, path: str | Path) -> DenseIndex:
        """Read a snapshot written by :meth:`save`; checks the manifest against the file."""
        p = Path(path)
        man = DenseManifest(**json.loads(Path(str(p) + ".json").read_text()))
        if hashlib.sha256(p.read_bytes()).hexdigest() != man.sha256:
            raise InvalidArgument(f"dense snapshot {p} does not match its manifest checksum")
        index = faiss.read_index(str(p))
        if index.d != man.dim or index.ntotal != man.ntotal:
            raise InvalidArgument(f"dense snapshot {p} disagrees with its manifest")
        out = cls(
            man.dim, ivf_threshold=man.ivf_threshold, nprobe=man.nprobe, embedder=man.embedder
        )
        if man.kind == "ivf":
            index.set_direct_map_type(faiss.DirectMap.Hashtable)
        out._index, out._ivf = index, man.kind == "ivf"
        return out
