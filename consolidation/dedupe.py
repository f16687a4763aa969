"""Duplicate detection: exact (normalised-text hash) groups and guarded near-duplicate
clusters. Pure functions over texts, vectors and entries; used by team aggregation and
by maintenance."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from blackboard import Entry

from .text import entry_text, l2_normalise, normalise_text

__all__ = [
    "DuplicateGroup",
    "DuplicateKind",
    "content_hash",
    "exact_groups",
    "find_duplicates",
    "near_duplicate_clusters",
    "numbers_of",
    "pooled_metadata",
]

MIN_NEAR_THRESHOLD = 0.9  # below this "near duplicate" starts to mean "related"


def content_hash(text: str) -> str:
    """sha256 hex (32 chars) of the normalised text (see :func:`text.normalise_text`)."""
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()[:32]


def exact_groups(texts: Sequence[str]) -> list[list[int]]:
    """Indices of ``texts`` grouped by normalised hash, each group ascending, groups in
    order of their first index; singletons included."""
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(texts):
        groups.setdefault(content_hash(t), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


_NUMBERED = re.compile(r"\w*\d\w*")


def numbers_of(text: str) -> tuple[str, ...]:
    """The tokens of ``text`` that carry a digit ("net-30", "t2", "2023", "15"), in order:
    two texts that differ there state different facts however alike they read (MiniLM
    puts "net-30 terms" and "net-60 terms" at cosine 0.95, "task t1" and "task t2" alike,
    and "round 0 step 1" beside "round 1 step 0": the order is part of the statement)."""
    return tuple(_NUMBERED.findall(normalise_text(text)))


def near_duplicate_clusters(vectors: np.ndarray, threshold: float = 0.92,
                            numbers: Sequence[tuple[str, ...]] | None = None,
                            ) -> list[list[int]]:
    """Cluster the rows of ``vectors`` (shape ``(n, dim)``) by cosine similarity.

    Seeds are taken in row order (callers order rows deterministically, e.g. by time).
    A seed gathers unassigned rows with cosine >= ``threshold`` to it, most similar first;
    a candidate joins only if, with it, every member is >= ``threshold`` to the seed, to
    the cluster centroid, and to every other member. The last (complete-linkage) check is
    the cohesion guard: in a chain A~B~C with A and C unrelated, A and C never share a
    cluster whatever the order. ``numbers`` (one per row, :func:`numbers_of`): rows whose
    numbers differ never cluster. Returns clusters (ascending indices) in seed order,
    singletons included. ``threshold`` must be in [0.9, 1].
    """
    if not MIN_NEAR_THRESHOLD <= threshold <= 1.0:
        raise ValueError(f"near-duplicate threshold must be in [0.9, 1], got {threshold}")
    v = l2_normalise(np.asarray(vectors, dtype=np.float64))
    n = v.shape[0]
    sim = v @ v.T
    # Rounding guard: identical vectors may score 0.9999999 against a threshold of 1.
    eps = 1e-9
    assigned = np.zeros(n, dtype=bool)
    clusters: list[list[int]] = []
    for seed in range(n):
        if assigned[seed]:
            continue
        members = [seed]
        assigned[seed] = True
        if not v[seed].any():  # a zero vector is similar to nothing
            clusters.append(members)
            continue
        cands = [j for j in range(n) if not assigned[j] and sim[seed, j] >= threshold - eps
                 and (numbers is None or numbers[j] == numbers[seed])]
        cands.sort(key=lambda j: (-sim[seed, j], j))
        for j in cands:
            trial = [*members, j]
            if min(sim[j, m] for m in members) < threshold - eps:
                continue
            centroid = l2_normalise(v[trial].sum(axis=0, keepdims=True))[0]
            if float((v[trial] @ centroid).min()) < threshold - eps:
                continue
            members = trial
            assigned[j] = True
        clusters.append(sorted(members))
    return clusters


class DuplicateKind(StrEnum):
    EXACT = "exact"
    NEAR = "near"


@dataclass(frozen=True, slots=True)
class DuplicateGroup:
    """Entries judged duplicates: ``keep`` survives (the earliest by ``(created_at, id)``),
    ``merged`` are folded into it (ascending by the same order). ``kind`` is NEAR when
    any member joined by similarity rather than identical normalised text."""

    keep: str
    merged: tuple[str, ...]
    kind: DuplicateKind


def find_duplicates(
    entries: Sequence[Entry],
    vectors: np.ndarray | None = None,
    threshold: float = 0.92,
) -> list[DuplicateGroup]:
    """Duplicate groups among ``entries`` (only groups of two or more).

    Exact groups first; then, when ``vectors`` (one row per entry, same order as
    ``entries``) are given, near-duplicate clustering over one representative per exact
    group. The result does not depend on the input order.
    """
    order = sorted(range(len(entries)), key=lambda i: (entries[i].created_at, entries[i].id))
    es = [entries[i] for i in order]
    exact = exact_groups([entry_text(e) for e in es])
    if vectors is None:
        merged_groups = [(g, False) for g in exact]
    else:
        vs = np.asarray(vectors)[order]
        reps = vs[[g[0] for g in exact]]
        nums = [numbers_of(entry_text(es[g[0]])) for g in exact]
        merged_groups = []
        for cl in near_duplicate_clusters(reps, threshold, nums):
            idx = sorted(i for c in cl for i in exact[c])
            merged_groups.append((idx, len(cl) > 1))
    out = []
    for idx, near in merged_groups:
        if len(idx) < 2:
            continue
        ids = [es[i].id for i in idx]
        kind = DuplicateKind.NEAR if near else DuplicateKind.EXACT
        out.append(DuplicateGroup(ids[0], tuple(ids[1:]), kind))
    return sorted(out, key=lambda g: g.keep)


def pooled_metadata(keep: Entry, merged: Sequence[Entry]) -> dict[str, Any]:
    """The metadata of the entry a duplicate group keeps: its own, with the merged
    entries' ids in ``merged_from`` and, for pooled entries (a team's statements), every
    member's ``attribution`` and ``agents``: merging duplicates must not forget who said
    them."""
    meta = dict(keep.metadata)
    meta["merged_from"] = sorted({*meta.get("merged_from", []), *(d.id for d in merged)})
    if isinstance(meta.get("attribution"), list):
        seen = {str(a.get("entry")) for a in meta["attribution"] if isinstance(a, dict)}
        for d in merged:
            for a in d.metadata.get("attribution") or []:
                if isinstance(a, dict) and str(a.get("entry")) not in seen:
                    seen.add(str(a.get("entry")))
                    meta["attribution"] = [*meta["attribution"], a]
        meta["agents"] = sorted({*meta.get("agents", []),
                                 *(x for d in merged for x in d.metadata.get("agents", []))})
        meta["duplicates"] = len(meta["attribution"]) - 1
    return meta
