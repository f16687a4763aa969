"""Second-stage ranking of a search's head (LLM-free): conversation-aware boosts applied
to the best ``rerank_depth`` hits of the first ranking.

- speaker: a query that names a speaker of the hits ("what did Caroline ...") lifts that
  speaker's messages: the evidence of a question about someone is mostly what they said;
- neighbours: a message inherits a share of its adjacent turns' score (a question's
  evidence is often the turn that answers the best-matching one);
- time: hits inside the period a query names (see :mod:`retrieval.timeline`) are lifted.

The maths are pure numpy functions over parallel arrays; :func:`rerank` maps hits to them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from .scoring import ScoredEntry, ScoringConfig
from .text import event_time_ms
from .timeline import resolve_periods

__all__ = ["in_periods", "named_mask", "neighbour_spread", "rerank"]

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


def named_mask(speakers: Sequence[str | None], query: str) -> Mask:
    """Which hits were said by a speaker the query names (by any word of the name)."""
    words = {w.lower() for w in _WORD.findall(query)}
    out = np.zeros(len(speakers), np.bool_)
    for i, s in enumerate(speakers):
        if s and any(p.lower() in words for p in _WORD.findall(s)):
            out[i] = True
    return out


def neighbour_spread(scores: F64, group: I64, position: I64, weight: float) -> F64:
    """``weight`` times the best score among each hit's adjacent turns (same ``group``,
    position +-1) present in the arrays; 0 for hits with no such neighbour (group -1)."""
    n = len(scores)
    out = np.zeros(n)
    if not n or weight == 0.0:
        return out
    order = np.lexsort((position, group))
    g, p, s = group[order], position[order], scores[order]
    left = np.zeros(n)
    right = np.zeros(n)
    adj = (g[1:] == g[:-1]) & (p[1:] - p[:-1] == 1) & (g[1:] >= 0)
    left[1:] = np.where(adj, s[:-1], 0.0)
    right[:-1] = np.where(adj, s[1:], 0.0)
    out[order] = weight * np.maximum(left, right)
    return out


def in_periods(times_ms: I64, periods: Sequence[tuple[int, int]]) -> Mask:
    """Which times fall in any of the inclusive ``(start, end)`` periods."""
    t = np.asarray(times_ms, np.int64)
    m = np.zeros(len(t), np.bool_)
    for a, b in periods:
        m |= (t >= a) & (t <= b)
    return m


def _position(e: ScoredEntry, groups: dict[tuple[str, str], int]) -> tuple[int, int]:
    v = e.entry.value
    if isinstance(v, Mapping) and v.get("kind") == "message":
        pos, session = v.get("position"), v.get("session")
        if isinstance(pos, int) and isinstance(session, str):
            return groups.setdefault((e.scope, session), len(groups)), pos
    return -1, -1


def rerank(
    hits: list[ScoredEntry], query: str | None, cfg: ScoringConfig, anchor_ms: int
) -> list[ScoredEntry]:
    """``hits`` (best first) re-scored by the conversation boosts of ``cfg``, best first;
    ``anchor_ms``: the newest moment of the searched memory (relative time counts from it)."""
    if not hits or query is None:
        return hits
    base = np.array([h.score for h in hits])
    extra = np.zeros(len(hits))
    if cfg.speaker_boost:
        speakers = [_speaker(h) for h in hits]
        extra += cfg.speaker_boost * named_mask(speakers, query)
    if cfg.neighbour_weight:
        groups: dict[tuple[str, str], int] = {}
        gp = np.array([_position(h, groups) for h in hits], np.int64).reshape(-1, 2)
        extra += neighbour_spread(base, gp[:, 0], gp[:, 1], cfg.neighbour_weight)
    if cfg.time_boost:
        times = np.array([event_time_ms(h.entry) for h in hits], np.int64)
        periods = resolve_periods(query, anchor_ms)
        if periods:
            extra += cfg.time_boost * in_periods(times, periods)
    if not extra.any():
        return hits
    score = base + extra
    order = np.argsort(-score, kind="stable")
    return [replace(hits[i], score=float(score[i])) for i in order.tolist()]


def _speaker(h: ScoredEntry) -> str | None:
    v = h.entry.value
    s = v.get("speaker") if isinstance(v, Mapping) else None
    if not isinstance(s, str):
        s = (h.entry.metadata or {}).get("speaker")
    return s if isinstance(s, str) else None
