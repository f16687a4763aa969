"""Revalidation of beliefs (pure): what a belief's lifecycle fields become at a time.

A live belief (``active`` or ``stale``) is due once its ``revalidation_due_ms`` has passed
(a belief written before that field existed is due at once). Then its freshness is
recomputed (``0.5 ** (age of newest support / cadence of its kind)``,
:func:`retrieval.truth.freshness`) and its status: ``invalidated`` when the weight against
it outweighs its support (the update-discounted ``standing_weight`` / ``against_weight``
the semantic transformer stored; beliefs written before them: ``support_weight`` /
``contradiction_weight``), else ``stale`` under ``stale_below``, else ``active``; the next
due time is one cadence later. The claim and evidence are never touched: new evidence
arrives through consolidation, which writes a new version.
"""

from __future__ import annotations

from typing import Any

from blackboard import Entry
from retrieval.truth import CADENCE_DAYS, DEFAULT_KIND, belief_status, freshness, is_belief

__all__ = ["revalidated"]

_DAY_MS = 86_400_000


def _num(m: dict[str, Any], *names: str) -> float:
    for n in names:
        v = m.get(n)
        if isinstance(v, int | float) and not isinstance(v, bool):
            return float(v)
    return 0.0


def revalidated(
    e: Entry, now_ms: int, stale_below: float = 0.25
) -> tuple[dict[str, Any], Any] | None:
    """The new ``(metadata, value)`` of belief ``e`` at ``now_ms`` (value None: unchanged),
    or None when it is not a live belief or not due yet."""
    if not is_belief(e) or belief_status(e) not in ("active", "stale"):
        return None
    m = dict(e.metadata)
    due = m.get("revalidation_due_ms")
    if isinstance(due, int) and now_ms < due:
        return None
    kind = str(m.get("belief_kind", DEFAULT_KIND))
    cadence = CADENCE_DAYS.get(kind, CADENCE_DAYS[DEFAULT_KIND]) * _DAY_MS
    fresh = round(freshness(e, now_ms), 6)
    support = _num(m, "standing_weight", "support_weight")
    against = _num(m, "against_weight", "contradiction_weight")
    status = "stale" if fresh < stale_below else "active"
    if against > support:
        status = "invalidated"
    m.update(status=status, freshness=fresh, revalidated_at_ms=now_ms,
             revalidation_due_ms=now_ms + int(cadence))
    value = None
    if isinstance(e.value, dict) and "status" in e.value:
        value = {**e.value, "status": status, "freshness": fresh}
    return m, value
