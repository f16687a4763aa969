from __future__ import annotations

import math

import numpy as np
import pytest

from blackboard.decay import strength_at
from retrieval import ScoringConfig
from retrieval.fusion import convex, minmax, mmr, rrf
from retrieval.scoring import current_strength, recency, relevance_floor


def test_minmax() -> None:
    np.testing.assert_allclose(minmax([1.0, 3.0, 2.0]), [0.0, 1.0, 0.5])
    np.testing.assert_allclose(minmax([2.0, 2.0]), [1.0, 1.0])
    assert len(minmax([])) == 0
    present = np.array([True, False, True])
    np.testing.assert_allclose(minmax([1.0, 99.0, 3.0], present), [0.0, 0.0, 1.0])


def test_convex() -> None:
    np.testing.assert_allclose(convex([1.0, 0.0], [0.0, 1.0], 0.3), [0.3, 0.7])
    np.testing.assert_allclose(convex([0.5], [0.5], 0.0), [0.5])


def test_rrf() -> None:
    out = rrf([[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]], k=60)
    expect = [1 / 61 + 1 / 63, 1 / 62 + 1 / 62, 1 / 63 + 1 / 61]
    np.testing.assert_allclose(out, expect)
    # a candidate absent from a list gets nothing from it
    out = rrf([[3.0, 2.0]], [np.array([False, True])], k=60)
    np.testing.assert_allclose(out, [0.0, 1 / 61])


def test_mmr_diversifies() -> None:
    v = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    rel = np.array([1.0, 0.99, 0.8])
    assert mmr(rel, v, 1.0, 3).tolist() == [0, 1, 2]  # lambda 1: relevance order
    assert mmr(rel, v, 0.5, 2).tolist() == [0, 2]  # the duplicate loses to the distinct one
    assert len(mmr(rel, v, 0.5, 0)) == 0


def test_recency() -> None:
    day = 86_400_000
    np.testing.assert_allclose(recency([0, -7 * day, 10], 0, 7 * day), [1.0, 0.5, 1.0])


@pytest.mark.parametrize("rate", [0.0, 0.05, 0.5])
@pytest.mark.parametrize("reinf", [0, 1, 7])
def test_current_strength_matches_decay(rate: float, reinf: int) -> None:
    since = np.array([0, 1000, 5000, 9000])
    got = current_strength(np.full(4, 0.8), since, np.full(4, reinf), 7000, rate, 1000)
    want = [strength_at(0.8, int(s), 7000, rate, reinf, 1000) for s in since]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_relevance_floor() -> None:
    dense = np.array([0.9, 0.1, math.nan, 0.2])
    matched = np.array([False, True, False, False])
    assert relevance_floor(dense, matched, 0.35).tolist() == [True, True, False, False]


def test_config_validation() -> None:
    with pytest.raises(ValueError):
        ScoringConfig(alpha=2.0)
    with pytest.raises(ValueError):
        ScoringConfig(w_recency=-1)
