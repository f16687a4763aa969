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
    named: dict[str, bool] = {}
    out = np.zeros(len(speakers), np.bool_)
    for i, s in enumerate(speakers):
        if s:
            hit = named.get(s)
            if hit is None:
                hit = named[s] = any(p.lower() in words for p in _WORD.findall(s))
            out[i] = hit
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


def _fields(hits: list[ScoredEntry], long_chars: int = 0
            ) -> tuple[list[str | None], I64, I64]:
    """Each hit's speaker, session group (-1: not a message, or a message longer than
    ``long_chars``, 0: no limit) and position, in one pass."""
    groups: dict[tuple[str, str], int] = {}
    speakers: list[str | None] = []
    gp = np.full((len(hits), 2), -1, np.int64)
    for i, h in enumerate(hits):
        v = h.entry.value
        sp: object = None
        if isinstance(v, Mapping) and v.get("kind") == "message":
            sp = v.get("speaker")
            pos, session = v.get("position"), v.get("session")
            text = v.get("text")
            long = bool(long_chars) and isinstance(text, str) and len(text) > long_chars
            if isinstance(pos, int) and isinstance(session, str) and not long:
                gp[i] = groups.setdefault((h.scope, session), len(groups)), pos
        else:
            sp = (h.entry.metadata or {}).get("speaker")
        speakers.append(sp if isinstance(sp, str) else None)
    return speakers, gp[:, 0], gp[:, 1]


def rerank(
    hits: list[ScoredEntry], query: str | None, cfg: ScoringConfig, anchor_ms: int, k: int
) -> list[ScoredEntry]:
    """The best ``k`` of ``hits`` (best first) re-scored by the conversation boosts of
    ``cfg``; ``anchor_ms``: the newest moment of the searched memory (relative time in the
    query counts from it)."""
    if not hits or query is None:
        return hits[:k]
    base = np.array([h.score for h in hits])
    extra = np.zeros(len(hits))
    speakers, group, position = _fields(hits, cfg.long_message_chars)
    if cfg.speaker_boost:
        extra += cfg.speaker_boost * named_mask(speakers, query)
    if cfg.neighbour_weight:
        extra += neighbour_spread(base, group, position, cfg.neighbour_weight)
    periods = resolve_periods(query, anchor_ms) if cfg.time_boost else []
    if periods:
        times = np.array([event_time_ms(h.entry) for h in hits], np.int64)
        extra += cfg.time_boost * in_periods(times, periods)
    if not extra.any():
        return hits[:k]
    score = base + extra
    order = np.argsort(-score, kind="stable")[:k]
    return [replace(hits[i], score=float(score[i])) for i in order.tolist()]
