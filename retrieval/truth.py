"""Current truth first: how recall treats beliefs (semantic facts with a canonical key) and
the versions a change of belief leaves behind.

A *belief* is an entry whose metadata carries a ``canonical_key`` (written by
``consolidation.semantic``). Its *status* is read, most trusted first, from the write
script's link (``superseded_by`` / the ``superseded`` tag: ``superseded``), then its
metadata, then its value (``active`` when none says). Valid time: ``valid_from_ms`` (when
its claim became what was believed) and ``valid_to_ms`` (when a changed claim replaced it);
recorded time is the entry's ``created_at``. Beliefs written before these fields existed
are read compatibly: ``valid_from`` is their earliest supporting evidence (else
``created_at``), and a superseded one ends at ``superseded_at`` (else ``updated_at``).

Recall (:func:`current_truth`), over hits already ranked:

* default: superseded, invalidated and proposed (collective, below its quorum) beliefs are
  left out (the superseded ones are also pre-filtered by tag, :func:`truth_filter`, so
  they cost nothing);
* a key's *chain* is per scope: a team's belief and a member's on the same canonical key
  are two holders' versions, neither hides nor orders the other;
* ``include_history``: they stay, each placed after the current belief of its chain;
* ``as_of``: per chain, the version whose valid time holds that instant (the one with the
  latest ``valid_from`` not after it, the latest recorded on a tie, unless its valid time
  had already ended, or it was below its quorum); other entries only when created by then.

Beliefs are re-scored by their confidence and freshness
(``score * (1 - w + w * confidence) * (1 - w + w * freshness)``, w = :data:`BELIEF_WEIGHT`);
freshness is ``0.5 ** (age of newest support / cadence of the belief's kind)``
(:data:`CADENCE_DAYS`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from blackboard import Entry

from .belief_keys import CADENCE_DAYS, DEFAULT_KIND, slot_of_key
from .query import MemoryQuery, TagFilter
from .scoring import ScoredEntry

__all__ = [
    "BELIEF_WEIGHT",
    "CADENCE_DAYS",
    "DEFAULT_KIND",
    "belief_key",
    "belief_status",
    "belief_valid_from",
    "belief_valid_to",
    "below_quorum",
    "current_truth",
    "freshness",
    "is_belief",
    "needs_truth",
    "truth_filter",
]

#: How much confidence and freshness each move a belief's score (0: not at all).
BELIEF_WEIGHT = 0.25
_DAY_MS = 86_400_000
#: Statuses never offered as current truth. ``proposed``: a collective entry held by fewer
#: agents than its quorum (consolidation.collective), kept only to carry their views.
_GONE = frozenset({"superseded", "invalidated", "proposed"})


def is_belief(e: Entry) -> bool:
    return isinstance(e.metadata.get("canonical_key"), str)


def belief_key(e: Entry) -> str:
    """The slot a belief's versions chain on (its canonical key without kind and subject
    type, :mod:`.belief_keys`: a version stored under a key of the older form is in the
    same chain)."""
    return slot_of_key(str(e.metadata.get("canonical_key") or e.key or e.id))


def below_quorum(e: Entry) -> bool:
    """A version written below its quorum (collective memory: ``promoted`` false). It stays
    so once superseded (the write script keeps its metadata), so ``as_of`` never gives it
    as what was held then either."""
    return e.metadata.get("promoted") is False


def belief_status(e: Entry) -> str:
    if e.superseded_by or "superseded" in e.tags:
        return "superseded"
    v = e.value if isinstance(e.value, dict) else {}
    return str(e.metadata.get("status") or v.get("status") or "active")


def _int(x: Any) -> int | None:
    return int(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def belief_valid_from(e: Entry) -> int:
    got = _int(e.metadata.get("valid_from_ms"))
    if got is not None:
        return got
    v = e.value if isinstance(e.value, dict) else {}
    raw = v.get("evidence")
    ev: list[Any] = raw if isinstance(raw, list) else []
    ats = [_int(x.get("at")) for x in ev if isinstance(x, dict) and x.get("stance") == "support"]
    return min((a for a in ats if a is not None), default=e.created_at)


def belief_valid_to(e: Entry) -> int | None:
    m = e.metadata
    got = _int(m.get("valid_to_ms"))
    if got is not None or "valid_from_ms" in m:
        return got  # written by this code: no end means its successor holds the same claim
    if belief_status(e) != "superseded":
        return None
    return _int(m.get("superseded_at")) or e.updated_at


def freshness(e: Entry, now_ms: int) -> float:
    m = e.metadata
    cadence = CADENCE_DAYS.get(str(m.get("belief_kind", DEFAULT_KIND)), CADENCE_DAYS[DEFAULT_KIND])
    last = _int(m.get("last_supported_ms")) or e.created_at
    return float(0.5 ** (max(0, now_ms - last) / (cadence * _DAY_MS)))


def _confidence(e: Entry) -> float:
    c = e.metadata.get("confidence")
    return min(1.0, max(0.0, float(c))) if isinstance(c, int | float) else 0.5


def needs_truth(q: MemoryQuery) -> bool:
    """Whether ``q`` asks for more than the current versions (a deeper pool then)."""
    return q.include_history or q.as_of is not None


def truth_filter(q: MemoryQuery) -> MemoryQuery:
    """``q`` with superseded entries pre-filtered out when recall wants current truth only
    (no history, no ``as_of``, and the caller's filter not asking for them)."""
    tf = q.tag_filter
    if q.include_history or q.as_of is not None or "superseded" in (tf.all_of | tf.any_of):
        return q
    if "superseded" in tf.none_of:
        return q
    return q.model_copy(update={"tag_filter": TagFilter(
        all_of=tf.all_of, any_of=tf.any_of, none_of=tf.none_of | {"superseded"})})


def _rescored(h: ScoredEntry, now_ms: int) -> ScoredEntry:
    w = BELIEF_WEIGHT
    factor = (1 - w + w * _confidence(h.entry)) * (1 - w + w * freshness(h.entry, now_ms))
    return dataclasses.replace(h, score=h.score * factor)


def _as_of_pick(hits: list[ScoredEntry], at_ms: int) -> list[ScoredEntry]:
    """Per chain (scope, key), the version valid at ``at_ms`` (see the module); others only
    when created by then."""
    best: dict[tuple[str, str], ScoredEntry] = {}
    out: list[ScoredEntry] = []
    for h in hits:
        e = h.entry
        if not is_belief(e):
            if e.created_at <= at_ms:
                out.append(h)
            continue
        if belief_valid_from(e) > at_ms:
            continue
        k = (e.scope, belief_key(e))  # each holder's own chain of versions
        cur = best.get(k)
        rank = (belief_valid_from(e), e.created_at)
        if cur is None or rank > (belief_valid_from(cur.entry), cur.entry.created_at):
            best[k] = h
    for h in best.values():
        end = belief_valid_to(h.entry)
        if below_quorum(h.entry):
            continue  # no collective truth then: below its quorum
        if end is None or at_ms < end:
            out.append(h)
    return out


def _history_after_current(hits: list[ScoredEntry]) -> list[ScoredEntry]:
    """Hits in order, except that no version in a chain (scope, key) precedes its current
    version: each key's versions take the key's positions, current first, then the newest
    recorded."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, h in enumerate(hits):
        if is_belief(h.entry):
            groups.setdefault((h.entry.scope, belief_key(h.entry)), []).append(i)
    out = list(hits)
    for idx in groups.values():
        if len(idx) < 2:
            continue
        members = sorted((hits[i] for i in idx), key=lambda h: (
            belief_status(h.entry) in _GONE, -h.entry.created_at))
        for i, h in zip(idx, members, strict=True):
            out[i] = h
    return out


def current_truth(
    hits: Sequence[ScoredEntry], q: MemoryQuery, now_ms: int
) -> list[ScoredEntry]:
    """Hits (ranked, deeper than needed) as recall returns them, best first, not cut to
    ``q.max_results`` (see the module for the rules)."""
    if not any(is_belief(h.entry) for h in hits) and q.as_of is None:
        return list(hits)
    out = [_rescored(h, now_ms) if is_belief(h.entry) else h for h in hits]
    if q.as_of is not None:
        out = _as_of_pick(out, int(q.as_of.timestamp() * 1000))
    elif not q.include_history:
        out = [h for h in out if not is_belief(h.entry) or belief_status(h.entry) not in _GONE]
    out.sort(key=lambda h: -h.score)
    return _history_after_current(out) if q.include_history else out
