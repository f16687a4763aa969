"""Memory levels, agent memory, producers, observers and dataflow edges on the blackboard.

``MemoryQuery``, ``TagFilter`` and ``ScoredEntry`` come from the retrieval layer: one query
model for ranked recall and for tag, time and key listing (``order="newest"``).
"""

from __future__ import annotations

from retrieval.query import MemoryQuery, TagFilter
from retrieval.scoring import ScoredEntry

from .access import AccessPolicy
from .agent import AgentMemory, Retriever
from .catalog import TransformerCatalog, known_transformers
from .config import DEFAULT_LEVEL_CONFIGS, LevelConfig, ScopeConfig, default_config
from .conversation import ConversationConfig, Message, message_of
from .errors import EdgeCycle, EdgeVersionConflict, InvalidEdge, SemanticRecallUnavailable
from .hierarchy import Hierarchy, default_edges, install_default_hierarchy
from .levels import LONG_TERM, MemoryLevel
from .memory_map import EdgeView, MemoryMap, ScopeView
from .naming import (
    COLLECTIVE,
    OwnerKind,
    ScopeName,
    agent_scope,
    agent_scopes,
    parse_scope,
    team_scope,
)
from .observers import ChangeHandle
from .producers import CallRecord, Observation, Producers, default_extractor, json_safe
from .registry import Registry
from .stats import ScopeStats, StrengthHistogram
from .subscriptions import (
    MemorySubscription,
    TagMatch,
    Trigger,
    register_transformer_name,
)
from .sync import SyncMemory

__all__ = [
    "COLLECTIVE",
    "DEFAULT_LEVEL_CONFIGS",
    "LONG_TERM",
    "AccessPolicy",
    "AgentMemory",
    "CallRecord",
    "ChangeHandle",
    "ConversationConfig",
    "EdgeCycle",
    "EdgeVersionConflict",
    "EdgeView",
    "Hierarchy",
    "InvalidEdge",
    "LevelConfig",
    "MemoryLevel",
    "MemoryMap",
    "MemoryQuery",
    "MemorySubscription",
    "Message",
    "Observation",
    "OwnerKind",
    "Producers",
    "Registry",
    "Retriever",
    "ScopeConfig",
    "ScopeName",
    "ScopeStats",
    "ScopeView",
    "ScoredEntry",
    "SemanticRecallUnavailable",
    "StrengthHistogram",
    "SyncMemory",
    "TagFilter",
    "TagMatch",
    "TransformerCatalog",
    "Trigger",
    "agent_scope",
    "agent_scopes",
    "default_config",
    "default_edges",
    "default_extractor",
    "install_default_hierarchy",
    "json_safe",
    "known_transformers",
    "message_of",
    "parse_scope",
    "register_transformer_name",
    "team_scope",
]
