"""Consolidation: pure transformers from batches of entries to drafts of derived entries.

Importing the package registers the built-in transformers, each with the worker role that
runs its edges (:func:`register_transformer`). That registry is the one list of transformer
names: workers derive their roles from it (:func:`transformer_roles`) and look transformers
up with :func:`get_transformer`; memory validates edge names against it, and installs the
default edges of :mod:`consolidation.catalog`, through its catalog entry point.
"""

from __future__ import annotations

from .dedupe import (
    DuplicateGroup,
    DuplicateKind,
    content_hash,
    exact_groups,
    find_duplicates,
    near_duplicate_clusters,
)
from .draft import Draft, Provenance
from .episodic import Episode, EpisodicParams, episodic, split_episodes
from .facts import Fact, canonical_key, extract_facts
from .params import InvalidParams
from .procedural import Pattern, ProceduralParams, mine_patterns, procedural, task_runs
from .semantic import BeliefStatus, SemanticParams, Stance, semantic, superseded_metadata
from .signals import Outcome
from .summarize import SummarizeParams, extractive_summary, summarize
from .team import TeamParams, team
from .transformer import (
    Similarity,
    TransformContext,
    Transformer,
    UnknownTransformer,
    get_transformer,
    identity,
    register_transformer,
    transformer_names,
    transformer_roles,
)

__all__ = [
    "BeliefStatus",
    "Draft",
    "DuplicateGroup",
    "DuplicateKind",
    "Episode",
    "EpisodicParams",
    "Fact",
    "InvalidParams",
    "Outcome",
    "Pattern",
    "ProceduralParams",
    "Provenance",
    "SemanticParams",
    "Similarity",
    "Stance",
    "SummarizeParams",
    "TeamParams",
    "TransformContext",
    "Transformer",
    "UnknownTransformer",
    "canonical_key",
    "content_hash",
    "episodic",
    "exact_groups",
    "extract_facts",
    "extractive_summary",
    "find_duplicates",
    "get_transformer",
    "identity",
    "mine_patterns",
    "near_duplicate_clusters",
    "procedural",
    "register_transformer",
    "semantic",
    "split_episodes",
    "summarize",
    "superseded_metadata",
    "task_runs",
    "team",
    "transformer_names",
    "transformer_roles",
]
