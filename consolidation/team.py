"""``team`` (members' stm -> team scope): pooled entries with attribution and dedupe.

Entries are taken in time order; exact duplicates (same normalised text) merge, then,
when ``ctx.similarity`` is given, near duplicates (cosine >= ``threshold``, at least 0.9,
with the cohesion guard of :func:`dedupe.near_duplicate_clusters`). Without a similarity
function only exact duplicates merge. Each group becomes one draft: the earliest entry's
value, the union of tags, attribution (agent, entry, scope, time) of every member, and
reinforcements = merged duplicates plus the members' own reinforcements. The agent of an
attribution is the member entry's author (the owner of its ``agent:<a>:...`` scope, or the
writer the write script established), never a name in its metadata or tags; such names are
kept as ``claimed_agent`` / ``claimed_agents`` and the first member's ``agent``/``actor``
metadata is not copied as the team entry's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from blackboard import Entry

from .dedupe import MIN_NEAR_THRESHOLD, content_hash, exact_groups, near_duplicate_clusters
from .draft import Draft
from .params import parse_params
from .signals import actors_of, chronological, claimed_actors_of
from .text import entry_text, union_tags
from .transformer import Similarity, TransformContext, register_transformer

__all__ = ["Merge", "TeamParams", "TeamTransformer", "duplicate_groups", "team"]


@dataclass(frozen=True, slots=True)
class TeamParams:
    """``threshold``: cosine at or above which two entries are near duplicates."""

    threshold: float = 0.92

    def __post_init__(self) -> None:
        if not MIN_NEAR_THRESHOLD <= self.threshold <= 1.0:
            raise ValueError(f"threshold must be in [{MIN_NEAR_THRESHOLD}, 1]")


#: How a group came together: "near" (near duplicates merged), "exact" (only exact ones),
#: "none" (a single entry).
Merge = Literal["near", "exact", "none"]


def _merge_kind(clusters: int, members: int) -> Merge:
    if clusters > 1:
        return "near"
    return "exact" if members > 1 else "none"


def duplicate_groups(
    texts: Sequence[str], similarity: Similarity | None, threshold: float
) -> list[tuple[list[int], Merge]]:
    """Indices of ``texts`` grouped as duplicates (each group ascending), with how each
    group merged: exact groups, then, given ``similarity``, near-duplicate clusters of
    their first texts (the cohesion guard of :func:`near_duplicate_clusters`)."""
    exact = exact_groups(texts)
    if similarity is None or len(exact) <= 1:
        return [(g, _merge_kind(1, len(g))) for g in exact]
    reps = np.asarray(similarity([texts[g[0]] for g in exact]), dtype=np.float64)
    groups: list[tuple[list[int], Merge]] = []
    for cl in near_duplicate_clusters(reps, threshold):
        idx = sorted(i for c in cl for i in exact[c])
        groups.append((idx, _merge_kind(len(cl), len(idx))))
    return groups


#: Metadata keys in which a writer may name an author: copied only as a claim.
_CLAIM_KEYS = ("agent", "actor")


def _attribution(e: Entry) -> dict[str, Any]:
    """Who wrote ``e`` (its author, established at write time), and, kept apart, whom its
    own metadata or tags claim wrote it."""
    out: dict[str, Any] = {
        "agent": next(iter(actors_of(e)), None),
        "entry": e.id,
        "scope": e.scope,
        "at": e.created_at,
    }
    claimed = claimed_actors_of(e)
    if claimed:
        out["claimed_agent"] = claimed
    return out


class TeamTransformer:
    """The LLM is not used: merging is a decision code must be able to explain."""

    name = "team"
    version = "1"

    async def __call__(self, batch: Sequence[Entry], ctx: TransformContext) -> list[Draft]:
        p = parse_params(TeamParams, ctx.params, self.name)
        es = chronological({e.id: e for e in batch}.values())
        if not es:
            return []
        texts = [entry_text(e) for e in es]
        return [
            self._draft([es[i] for i in idx], merge, content_hash(texts[idx[0]]), ctx)
            for idx, merge in duplicate_groups(texts, ctx.similarity, p.threshold)
        ]

    def _draft(
        self, members: list[Entry], merge: Merge, text_hash: str, ctx: TransformContext
    ) -> Draft:
        """One group's draft: the first member's value and metadata, with the team's."""
        first = members[0]
        agents = sorted({a for e in members for a in actors_of(e)})
        authors = actors_of(first)
        meta = {k: v for k, v in first.metadata.items() if k not in _CLAIM_KEYS}
        claimed = sorted({a for e in members for a in claimed_actors_of(e)} - set(agents))
        if claimed:
            meta["claimed_agents"] = claimed
        meta.update(
            kind="team",
            agents=agents,
            attribution=[_attribution(e) for e in members],
            merge=merge,
            duplicates=len(members) - 1,
            content_hash=text_hash,
        )
        return Draft(
            value=first.value,
            provenance=ctx.provenance(self, [e.id for e in members]),
            tags=union_tags(e.tags for e in members),
            metadata=meta,
            importance=max(e.importance for e in members),
            key=None,
            reinforcements=len(members) - 1 + sum(e.reinforcements for e in members),
            reinforced_by=tuple(a for a in agents if a not in authors),
        )


team = register_transformer(TeamTransformer())
