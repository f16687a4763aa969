"""Final scores: fused relevance plus current strength, recency and importance.

Times are ms. ``ScoringConfig`` holds every weight; ``ScoredEntry`` carries every component
so a caller can see why an entry ranked where it did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from blackboard import Entry, EntryRef
from blackboard.decay import strength_at

from .text import LONG_MESSAGE_CHARS

# numpy is imported in the functions that compute with it: memory's public types
# (ScoredEntry) live here, and `import memory` must not pay numpy's ~70 ms import
# (retrieval/__init__.py promises it).
if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    F64 = npt.NDArray[np.float64]

__all__ = [
    "ScoredEntry",
    "ScoringConfig",
    "current_strength",
    "entry_strength",
    "recency",
    "relevance_floor",
]

DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class ScoringConfig:
    """Weights and thresholds of ranking.

    ``score = w_relevance * fused + w_strength * min(strength, 1) + w_recency * recency +
    w_importance * importance``; ``recency = 0.5 ** (age_ms / recency_half_life_ms)``.
    ``alpha`` is the dense weight of the convex fusion (tuned on the LoCoMo dev split);
    ``rrf_k`` the RRF constant. Relevance floor: a candidate is kept only if it matches a
    query term (BM25) or its dense cosine is at least ``dense_floor``. ``candidates`` is
    how many hits each index contributes per scope (at least ``candidate_factor *
    max_results``). ``speaker_boost``, ``neighbour_weight`` and ``time_boost`` weigh the
    second stage (:mod:`retrieval.rerank`) over the best ``rerank_depth`` hits (0: off); a
    message longer than ``long_message_chars`` (0: no limit) takes no part in the
    neighbour spread, and a text that long gets no first-pass vector while it waits for
    its own (:data:`retrieval.text.LONG_MESSAGE_CHARS`).
    ``prf_docs`` > 0: pseudo-relevance feedback from that many first-pass hits
    (:mod:`retrieval.prf`: ``prf_terms`` BM25 terms, Rocchio weight ``prf_dense``,
    ``hop_entities`` names for a second hop).
    """

    alpha: float = 0.4
    rrf_k: int = 60
    w_relevance: float = 1.0
    w_strength: float = 0.05
    w_recency: float = 0.05
    w_importance: float = 0.05
    recency_half_life_ms: int = 7 * DAY_MS
    dense_floor: float = 0.35
    #: the same floor for a first-pass cosine (:mod:`retrieval.embedders.static`), whose
    #: scale is lower: a related pair scores ~0.3 there ("when is the bill due" / "Acme
    #: pays its invoices": 0.30), ~0.5 with the model; a nonsense word meets none above
    #: ~0.17 once numbers are left out of the pooling (``wordless_ids``). Taken in the input
    #: layer's space even when distilled rows rank (``StaticEmbedder.embed_with_floor``)
    first_pass_floor: float = 0.25
    candidates: int = 50
    candidate_factor: int = 5
    speaker_boost: float = 0.3
    neighbour_weight: float = 0.5
    time_boost: float = 0.1
    rerank_depth: int = 50
    long_message_chars: int = LONG_MESSAGE_CHARS
    prf_docs: int = 0
    prf_terms: int = 5
    prf_dense: float = 0.5
    hop_entities: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError("alpha must be in [0, 1]")
        if self.long_message_chars < 0:
            raise ValueError("long_message_chars must be >= 0 (0: no limit)")
        if self.recency_half_life_ms <= 0:
            raise ValueError("recency_half_life_ms must be positive")
        if min(self.w_relevance, self.w_strength, self.w_recency, self.w_importance,
               self.speaker_boost, self.neighbour_weight, self.time_boost) < 0:
            raise ValueError("weights must be >= 0")


def recency(created_at: npt.ArrayLike, now_ms: int, half_life_ms: int) -> F64:
    """``0.5 ** (age / half_life)`` in (0, 1]; a future timestamp counts as age 0."""
    import numpy as np

    age = np.maximum(now_ms - np.asarray(created_at, np.float64), 0.0)
    return np.power(0.5, age / half_life_ms)


def current_strength(
    strength: npt.ArrayLike,
    since_ms: npt.ArrayLike,
    reinforcements: npt.ArrayLike,
    now_ms: int,
    rate: float,
    tick_ms: int,
) -> F64:
    """:func:`blackboard.decay.strength_at`, vectorised over entries (same formula)."""
    import numpy as np

    s = np.asarray(strength, np.float64)
    if rate <= 0.0:
        return s.copy()
    q = 1.0 - rate / (1.0 + np.log1p(np.asarray(reinforcements, np.float64)))
    dt = np.maximum(now_ms - np.asarray(since_ms, np.float64), 0.0)
    return np.where(q <= 0.0, 0.0, s * np.power(np.maximum(q, 0.0), dt / tick_ms))


def entry_strength(entry: Entry, now_ms: int, rate: float, tick_ms: int) -> float:
    """The current strength of one entry (the reference the vectorised form must match)."""
    return strength_at(
        entry.strength, entry.strength_at, now_ms, rate, entry.reinforcements, tick_ms
    )


def relevance_floor(
    dense: F64, bm25_matched: npt.NDArray[np.bool_], dense_floor: float
) -> npt.NDArray[np.bool_]:
    """Which candidates carry real evidence of relevance: a BM25 term match, or a raw dense
    cosine of at least ``dense_floor`` (``dense`` NaN: no vector)."""
    import numpy as np

    # NaN >= x is False: a candidate without a cosine passes on its BM25 match alone
    return np.asarray(bm25_matched, bool) | (np.asarray(dense, np.float64) >= dense_floor)


@dataclass(frozen=True, slots=True)
class ScoredEntry:
    """One recall hit with every score component.

    ``dense`` is the raw cosine (``None``: no vector or no semantic query), ``bm25`` the raw
    BM25 score (0: no term match; ``None``: no text query), ``fused`` the fused relevance in
    [0, 1], ``strength`` the current decayed strength, ``recency`` and ``importance`` in
    [0, 1], ``score`` the final weighted sum used for ranking. ``also_in``: where else the
    same fact was found (copies, summaries, beliefs... collapsed into this hit by
    :mod:`retrieval.collapse`), best-ranked first. ``has_vector``: whether the
    entry had its vector when the search ran (False: it could rank by BM25 and the filters
    only; set by the retriever, :mod:`retrieval.completeness`). ``cites``: the ids of the
    raw entries a derived hit (a copy, summary, episode, belief, team copy) stands on;
    ``()`` for a raw entry (:mod:`retrieval.citations`). ``has_first_pass``: it had no
    vector but ranked by its first-pass one (rough meaning, :mod:`retrieval.embedders.static`).
    ``newer_than``: the id of an earlier statement on the same thing whose place this hit
    took (:mod:`retrieval.updates`: the newest statement ranks first), which is why its score
    can be lower than a hit's below it; None when it is where its score put it.
    """

    entry: Entry
    scope: str
    dense: float | None
    bm25: float | None
    fused: float
    strength: float
    recency: float
    importance: float
    score: float
    also_in: tuple[EntryRef, ...] = ()
    has_vector: bool = False
    cites: tuple[str, ...] = ()
    has_first_pass: bool = False
    newer_than: str | None = None

    def explain(self) -> str:
        """A one-line account of the hit: its text first, then where it is and the score."""
        dense = "n/a" if self.dense is None else f"{self.dense:.3f}"
        bm25 = "n/a" if self.bm25 is None else f"{self.bm25:.3f}"
        return (
            f"{self.entry.text!r} {self.entry.id} [{self.scope}] score={self.score:.4f}: "
            f"fused={self.fused:.3f} "
            f"(dense cos={dense}, bm25={bm25}), strength={self.strength:.3f}, "
            f"recency={self.recency:.3f}, importance={self.importance:.2f}"
            + (f"; also in {_places(self.also_in)}" if self.also_in else "")
            + (f"; cites {_ids(self.cites)}" if self.cites else "")
            + (f"; ranked in the place of {self.newer_than}, an earlier statement on the "
               "same thing" if self.newer_than else "")
        )

    def __repr__(self) -> str:
        return (f"<ScoredEntry score={self.score:.3f} {self.scope} {self.entry.id} "
                f"{self.entry.text[:60]!r}>")


def _places(refs: tuple[EntryRef, ...], shown: int = 3) -> str:
    """``also_in`` for a person: the first ``shown`` scopes and how many more."""
    head = ", ".join(f"{r.scope} {r.entry_id}" for r in refs[:shown])
    return head + (f" (+{len(refs) - shown} more)" if len(refs) > shown else "")


def _ids(ids: tuple[str, ...], shown: int = 3) -> str:
    """``cites`` for a person: the first ``shown`` ids and how many more."""
    return ", ".join(ids[:shown]) + (f" (+{len(ids) - shown} more)" if len(ids) > shown else "")
