"""Fusion weights per lens: a lens may set the dense weight ``alpha``; the caller's wins."""

from __future__ import annotations

from retrieval import LensPreset, MemoryQuery, register_lens


def test_lens_sets_alpha_unless_the_caller_does() -> None:
    register_lens("test_lens_alpha", LensPreset(alpha=0.8), replace=True)
    assert MemoryQuery(lens="test_lens_alpha", query="x").alpha == 0.8
    assert MemoryQuery(lens="test_lens_alpha", query="x", alpha=0.2).alpha == 0.2
    assert MemoryQuery(lens="failures", query="x").alpha is None  # engine default
