"""Memory levels, agent memory, producers, observers and dataflow edges on the blackboard.

``MemoryQuery``, ``TagFilter`` and ``ScoredEntry`` come from the retrieval layer: one query
model for ranked recall and for tag, time and key listing (``order="newest"``). Exported
here: what an application uses (the memory, its blocking facade, levels, queries, edges and
their registry, scope names, conversations, the map and stats it returns, its errors);
access rules, producers' records, the transformer catalog and the like are imported from
their modules.
"""

from __future__ import annotations

from retrieval.goal import RetrievalContext
from retrieval.query import MemoryQuery, TagFilter
from retrieval.scoring import ScoredEntry

from .agent import AgentMemory
from .config import LevelConfig, ScopeConfig, default_config
from .context import Context
from .conversation import ConversationConfig, Message
from .errors import (
    EdgeCycle,
    EdgeVersionConflict,
    InvalidClaim,
    InvalidEdge,
    NotABelief,
    SemanticRecallUnavailable,
)
from .hierarchy import Hierarchy, default_edges, install_default_hierarchy
from .levels import MemoryLevel
from .memory_map import MemoryMap
from .naming import COLLECTIVE, ScopeName, agent_scope, parse_scope, team_scope
from .observers import ChangeHandle
from .registry import Registry
from .stats import ScopeStats
from .subscriptions import MemorySubscription, TagMatch, Trigger
from .sync import SyncMemory
from .utility import FeedbackResult

__all__ = [
    "COLLECTIVE",
    "AgentMemory",
    "ChangeHandle",
    "Context",
    "ConversationConfig",
    "EdgeCycle",
    "EdgeVersionConflict",
    "FeedbackResult",
    "Hierarchy",
    "InvalidClaim",
    "InvalidEdge",
    "LevelConfig",
    "MemoryLevel",
    "MemoryMap",
    "MemoryQuery",
    "MemorySubscription",
    "Message",
    "NotABelief",
    "Registry",
    "RetrievalContext",
    "ScopeConfig",
    "ScopeName",
    "ScopeStats",
    "ScoredEntry",
    "SemanticRecallUnavailable",
    "SyncMemory",
    "TagFilter",
    "TagMatch",
    "Trigger",
    "agent_scope",
    "default_config",
    "default_edges",
    "install_default_hierarchy",
    "parse_scope",
    "team_scope",
]
