"""Consolidation: pure transformers from batches of entries to drafts of derived entries.

Importing the package registers the built-in transformers, each with the worker role that
runs its edges (:func:`register_transformer`). That registry is the one list of transformer
names: workers derive their roles from it (:func:`transformer_roles`) and look transformers
up with :func:`get_transformer`; memory validates edge names against it, and installs the
default edges of :mod:`consolidation.catalog`, through its catalog entry point.

Exported here: what a transformer author or a caller of the built-in transformers uses
(the registry, the protocol and its context, drafts, the built-ins and their parameters);
the pure helpers behind them (dedupe, facts, episodes, patterns) are imported from their
modules.
"""

from __future__ import annotations

from .draft import Draft, Provenance
from .episodic import EpisodicParams, episodic
from .params import InvalidParams
from .procedural import ProceduralParams, procedural
from .semantic import SemanticParams, semantic
from .summarize import SummarizeParams, summarize
from .team import TeamParams, team
from .team_beliefs import TeamBeliefParams, team_beliefs
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

# isort: split
# Registered last, so the roles keep their order (a role is listed when its first
# transformer registers): the collective one follows the roles it pools from.
from .collective import CollectiveParams, collective_beliefs
from .collective_procedures import collective_procedures

# The table of contents (its own role, after every role whose scopes it covers).
from .toc import timeline

__all__ = [
    "CollectiveParams",
    "Draft",
    "EpisodicParams",
    "InvalidParams",
    "ProceduralParams",
    "Provenance",
    "SemanticParams",
    "Similarity",
    "SummarizeParams",
    "TeamBeliefParams",
    "TeamParams",
    "TransformContext",
    "Transformer",
    "UnknownTransformer",
    "collective_beliefs",
    "collective_procedures",
    "episodic",
    "get_transformer",
    "identity",
    "procedural",
    "register_transformer",
    "semantic",
    "summarize",
    "team",
    "team_beliefs",
    "timeline",
    "transformer_names",
    "transformer_roles",
]
