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

Across batches: each group's draft is keyed ``team:<content hash>`` (of its first text), so
the same statement from another member -- another edge, another batch -- finds the team's
entry and supersedes it with the new members' attribution added (reinforcements and
agents pooled, the first statement's value kept); members already attributed are not
counted again (a replayed batch drafts nothing). Near duplicates merge within a batch;
across batches only the same normalised text finds the held entry (and the maintenance
dedupe job merges what is left).

A member's statement of one fact (``Acme Corp lives in Springfield``) is keyed by the slot
it states instead, ``team:<slot>`` (:mod:`consolidation.team_statements`): the statement
said last is the team's current one there, the same statement from several members one
entry with every one's attribution, and a newer contrary statement supersedes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from blackboard import Entry

from .dedupe import (
    MIN_NEAR_THRESHOLD,
    content_hash,
    exact_groups,
    near_duplicate_clusters,
    numbers_of,
)
from .draft import Draft
from .params import parse_params
from .signals import actors_of, chronological, claimed_actors_of
from .team_statements import slot_draft, statement_slot
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
    nums = [numbers_of(texts[g[0]]) for g in exact]
    groups: list[tuple[list[int], Merge]] = []
    for cl in near_duplicate_clusters(reps, threshold, nums):
        idx = sorted(i for c in cl for i in exact[c])
        groups.append((idx, _merge_kind(len(cl), len(idx))))
    return groups


#: Metadata keys in which a writer may name an author: copied only as a claim.
_CLAIM_KEYS = ("agent", "actor")
#: A team entry's key: the statement's content hash (the same statement from another
#: member, in another batch, merges into it).
KEY_PREFIX = "team:"
#: Metadata not carried from a member or a previous version into the team's entry.
_NOT_CARRIED = frozenset({*_CLAIM_KEYS, "provenance", "supersedes", "superseded_by",
                          "superseded_at", "status"})


def _carried(prior: Entry | None) -> list[dict[str, Any]]:
    """The attribution a previous version holds."""
    got = prior.metadata.get("attribution") if prior is not None else None
    return [a for a in got if isinstance(a, dict)] if isinstance(got, list) else []


def _first_agents(attribution: list[dict[str, Any]]) -> tuple[str, ...]:
    first = attribution[0].get("agent") if attribution else None
    return (first,) if isinstance(first, str) else ()


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
    version = "3"  # 2: keyed by content, merging across batches; 3: statements by slot
    #: Members' edges share the team's entries as priors (workers.target_turn): two
    #: firings at once would each supersede the held statement with only their own
    #: attribution added, and one member's would be lost.
    one_target_at_a_time = True
    #: Near duplicates are found by meaning when the worker has an embedder.
    compares_entries = True
    #: A member's statement edited in place is new input to the slot's held entry (each
    #: member's latest statement per claim counts once: applying it again adds nothing).
    redrafts_updates = True

    async def __call__(self, batch: Sequence[Entry], ctx: TransformContext) -> list[Draft]:
        p = parse_params(TeamParams, ctx.params, self.name)
        es = chronological({e.id: e for e in batch}.values())
        if not es:
            return []
        # A statement about one slot joins the team's current truth on it
        # (consolidation.team_statements); the rest is pooled by content.
        slotted: dict[str, list[tuple[Entry, str]]] = {}
        rest: list[Entry] = []
        for e in es:
            got = statement_slot(e)
            if got is None:
                rest.append(e)
            else:
                slotted.setdefault(got[0], []).append((e, got[1]))
        texts = [entry_text(e) for e in rest]
        drafts = [
            (rest[idx[0]], self._draft([rest[i] for i in idx], merge,
                                       content_hash(texts[idx[0]]), ctx))
            for idx, merge in duplicate_groups(texts, ctx.similarity, p.threshold)
        ]
        drafts += [(ms[0][0], slot_draft(k, ms, ctx, lambda ids: ctx.provenance(self, ids)))
                   for k, ms in slotted.items()]
        place = {e.id: i for i, e in enumerate(es)}
        drafts.sort(key=lambda fd: place[fd[0].id])
        return [d for _, d in drafts if d is not None]

    def _draft(
        self, members: list[Entry], merge: Merge, text_hash: str, ctx: TransformContext
    ) -> Draft | None:
        """One group's draft: the first member's value and metadata, with the team's; when
        the team already holds the statement (another member said it in another batch),
        the held entry's, with the new members' attribution added (it supersedes it)."""
        key = f"{KEY_PREFIX}{text_hash}"
        prior = ctx.existing.get(key)
        carried = _carried(prior)
        counted = {str(a.get("entry")) for a in carried}
        new = [e for e in members if e.id not in counted]
        if prior is not None and not new:
            return None  # a replayed batch: every member is already attributed
        base = prior if prior is not None else new[0]
        agents = sorted({*(prior.metadata.get("agents", []) if prior is not None else []),
                         *(a for e in new for a in actors_of(e))})
        authors = actors_of(new[0]) if prior is None else _first_agents(carried)
        meta = {k: v for k, v in base.metadata.items() if k not in _NOT_CARRIED}
        claimed = sorted({*meta.get("claimed_agents", []),
                          *(a for e in new for a in claimed_actors_of(e))} - set(agents))
        if claimed:
            meta["claimed_agents"] = claimed
        attribution = [*carried, *(_attribution(e) for e in new)]
        meta.update(
            kind="team",
            agents=agents,
            attribution=attribution,
            merge="near" if "near" in (merge, meta.get("merge")) else _merge_kind(
                1, len(attribution)),
            duplicates=len(attribution) - 1,
            content_hash=text_hash,
        )
        held = prior.reinforcements + 1 if prior is not None else 0
        return Draft(
            value=base.value,
            provenance=ctx.provenance(self, [e.id for e in new]),
            tags=union_tags([*(e.tags for e in new),
                             *([prior.tags - {"superseded"}] if prior is not None else [])]),
            metadata=meta,
            importance=max(e.importance for e in [*new, *([prior] if prior else [])]),
            key=key,
            reinforcements=held + len(new) - 1 + sum(e.reinforcements for e in new),
            reinforced_by=tuple(a for a in agents if a not in authors),
            supersedes=prior.id if prior is not None else None,
        )


team = register_transformer(TeamTransformer())
