from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from retrieval.dense import DenseIndex


def unit(n: int, dim: int, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def brute(vecs: np.ndarray, ids: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    return ids[np.argsort(-(vecs @ q), kind="stable")[:k]].tolist()


def test_search_filter_remove_replace() -> None:
    v, ids = unit(500, 16), np.arange(500, dtype=np.int64) * 3 + 1
    d = DenseIndex(16)
    d.add(ids, v)
    assert len(d) == 500
    hits = d.search(v[7], 5)
    assert hits.ids.tolist() == brute(v, ids, v[7], 5) and hits.ids[0] == ids[7]
    allowed = ids[100:140]
    hits = d.search(v[7], 5, allowed_ids=allowed)
    # the filter applies before the top-k: 5 results, all allowed, the best of them
    assert hits.ids.tolist() == brute(v[100:140], allowed, v[7], 5)
    assert len(d.search(v[7], 5, allowed_ids=np.zeros(0, np.int64)).ids) == 0
    assert d.remove([ids[7], 10**9]) == 1
    assert ids[7] not in d.search(v[7], 10).ids
    d.add([ids[8]], v[9:10])  # replace
    assert len(d) == 499
    np.testing.assert_allclose(d.reconstruct([ids[8]])[0], v[9], rtol=1e-6)
    np.testing.assert_allclose(d.scores_for(v[0], ids[:2]), v[:2] @ v[0], rtol=1e-5)
    assert d.search(v[0], 10_000).ids.shape == (499,)


def test_bad_shapes() -> None:
    d = DenseIndex(4)
    with pytest.raises(ValueError, match="shape"):
        d.add([1, 2], unit(3, 4))
    with pytest.raises(ValueError, match="duplicate"):
        d.add([1, 1], unit(2, 4))


def test_switches_to_ivf_and_supports_remove() -> None:
    v, ids = unit(3000, 16, 1), np.arange(3000, dtype=np.int64)
    d = DenseIndex(16, ivf_threshold=1000, nprobe=64)
    d.add(ids, v)
    assert d.needs_rebuild
    d.rebuild()
    assert d.is_ivf and len(d) == 3000 and not d.needs_rebuild
    assert d.search(v[5], 1).ids.tolist() == [5]
    allowed = np.arange(2000, 2100, dtype=np.int64)
    hits = d.search(v[5], 5, allowed_ids=allowed)
    assert set(hits.ids.tolist()) <= set(allowed.tolist()) and len(hits.ids) == 5
    assert d.remove([5, 6, 99999]) == 2
    assert 5 not in d.search(v[5], 10).ids
    d.add([5], v[5:6])
    assert d.search(v[5], 1).ids.tolist() == [5]


@pytest.mark.parametrize("ivf", [False, True])
def test_snapshot_round_trip(tmp_path: Path, ivf: bool) -> None:
    v, ids = unit(2000, 8, 2), np.arange(2000, dtype=np.int64) + 10
    d = DenseIndex(8, ivf_threshold=1000, nprobe=1000, embedder="test-emb")
    d.add(ids, v)
    if ivf:
        d.rebuild()
    man = d.save(tmp_path / "dense.faiss")
    assert man.ntotal == 2000 and man.kind == ("ivf" if ivf else "flat")
    e = DenseIndex.load(tmp_path / "dense.faiss")
    assert e.is_ivf == ivf and e.embedder == "test-emb" and len(e) == 2000
    for i in (0, 500, 1999):
        assert e.search(v[i], 3).ids.tolist() == d.search(v[i], 3).ids.tolist()
    assert e.remove([10]) == 1
    (tmp_path / "dense.faiss").write_bytes(b"corrupt")
    with pytest.raises(ValueError, match="checksum"):
        DenseIndex.load(tmp_path / "dense.faiss")
