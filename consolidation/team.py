"""``team`` (members' stm -> team scope): pooled entries with attribution and dedupe.

Entries are taken in time order; exact duplicates (same normalised text) merge, then,
when ``ctx.similarity`` is given, near duplicates (cosine >= ``threshold``, at least 0.9,
with the cohesion guard of :func:`dedupe.near_duplicate_clusters`). Without a similarity
function only exact duplicates merge. Each group becomes one draft: the earliest entry's
value, the union of tags, attribution (agent, entry, scope, time) of every member, and
reinforcements = merged duplicates plus the members' own reinforcements.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from blackboard import Entry

from .dedupe import MIN_NEAR_THRESHOLD, content_hash, exact_groups, near_duplicate_clusters
from .draft import Draft
from .params import parse_params
from .signals import actors_of, chronological
from .text import entry_text, union_tags
from .transformer import TransformContext, register_transformer

__all__ = ["TeamParams", "TeamTransformer", "team"]


@dataclass(frozen=True, slots=True)
class TeamParams:
    """``threshold``: cosine at or above which two entries are near duplicates."""

    threshold: float = 0.92

    def __post_init__(self) -> None:
        if not MIN_NEAR_THRESHOLD <= self.threshold <= 1.0:
            raise ValueError(f"threshold must be in [{MIN_NEAR_THRESHOLD}, 1]")


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
        exact = exact_groups(texts)
        groups: list[tuple[list[int], str]] = []
        if ctx.similarity is not None and len(exact) > 1:
            reps = np.asarray(ctx.similarity([texts[g[0]] for g in exact]), dtype=np.float64)
            for cl in near_duplicate_clusters(reps, p.threshold):
                idx = sorted(i for c in cl for i in exact[c])
                merge = "near" if len(cl) > 1 else ("exact" if len(idx) > 1 else "none")
                groups.append((idx, merge))
        else:
            groups = [(g, "exact" if len(g) > 1 else "none") for g in exact]
        out = []
        for idx, merge in groups:
            members = [es[i] for i in idx]
            first = members[0]
            attribution = [
                {
                    "agent": next(iter(actors_of(e)), None),
                    "entry": e.id,
                    "scope": e.scope,
                    "at": e.created_at,
                }
                for e in members
            ]
            agents = sorted({a for e in members for a in actors_of(e)})
            authors = actors_of(first)
            meta = dict(first.metadata)
            meta.update(
                kind="team",
                agents=agents,
                attribution=attribution,
                merge=merge,
                duplicates=len(members) - 1,
                content_hash=content_hash(texts[idx[0]]),
            )
            out.append(
                Draft(
                    value=first.value,
                    provenance=ctx.provenance(self, [e.id for e in members]),
                    tags=union_tags(e.tags for e in members),
                    metadata=meta,
                    importance=max(e.importance for e in members),
                    key=None,
                    reinforcements=len(members) - 1 + sum(e.reinforcements for e in members),
                    reinforced_by=tuple(a for a in agents if a not in authors),
                )
            )
        return out


team = register_transformer(TeamTransformer())
