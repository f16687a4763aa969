"""Agents reconcile in recall: a team's belief on a canonical key goes before its members'.

A team belief (``metadata["team_belief"]``, written by consolidation's ``team_beliefs``
from every member's evidence, the agent's own included) is the team's current truth on
its key. When a recall returns it together with a member's own belief on the same key,
the member's belief may be older or outvoted (agent1 heard "Springfield" twice before
the move; its team, all three agents' latest word, says "Shelbyville"), so the team
belief takes the place of the first hit on its key and the others follow it. Nothing is
dropped: the agent's own belief stays in the list, after the team's. Pure: a reordering
of hits by their stored metadata.
"""

from __future__ import annotations

from collections.abc import Sequence

from blackboard import Entry

from .belief_keys import slot_of_key
from .scoring import ScoredEntry

__all__ = ["is_team_belief", "team_beliefs_first"]


def _key(h: ScoredEntry) -> str | None:
    # A custom retriever may answer with hits of its own kind: those have no key.
    e = getattr(h, "entry", None)
    k = e.metadata.get("canonical_key") if isinstance(e, Entry) else None
    return slot_of_key(k) if isinstance(k, str) else None  # either key form


def is_team_belief(e: object) -> bool:
    """A live team belief (its team's current truth on its key)."""
    return isinstance(e, Entry) and bool(e.metadata.get("team_belief")) and not e.superseded_by


def _is_team_belief(h: ScoredEntry) -> bool:
    return is_team_belief(getattr(h, "entry", None))


def team_beliefs_first(hits: Sequence[ScoredEntry]) -> list[ScoredEntry]:
    """``hits`` with each live team belief moved to the place of the first hit sharing
    its canonical key (the rest keep their order)."""
    out = list(hits)
    for team_hit in [h for h in hits if _is_team_belief(h)]:
        key = _key(team_hit)
        if key is None:
            continue
        first = next(i for i, h in enumerate(out) if _key(h) == key)
        at = out.index(team_hit)
        if first < at:
            out.insert(first, out.pop(at))
    return out
