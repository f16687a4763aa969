"""Every package's public names, pinned: a name joins or leaves ``__all__`` only with this
list, so the API each layer offers the ones above (and applications) is a decision, not a
side effect. Pure: importing the packages touches no server.

``gateway`` exports nothing from its package (its app, routes and CLI are imported from
their modules), so it has no ``__all__``.
"""

from __future__ import annotations

import importlib

import pytest

PUBLIC = {
    "blackboard": [
        "AccessDenied",
        "AuditRecord",
        "Batch",
        "BatchHandler",
        "Blackboard",
        "BlackboardError",
        "ClientSettings",
        "ConfigMismatch",
        "ConsumeCounters",
        "ConsumeOptions",
        "DeadLetter",
        "EdgeDefinition",
        "EdgeRecord",
        "Entry",
        "EntryRef",
        "EntryTooLarge",
        "Event",
        "EventType",
        "InvalidArgument",
        "InvalidKey",
        "InvalidMetadata",
        "InvalidScope",
        "InvalidTag",
        "InvalidValue",
        "Lease",
        "LeaseTable",
        "NotFound",
        "Records",
        "RedisServer",
        "Scope",
        "ScopeDamaged",
        "ScopeFull",
        "ScopePolicy",
        "ScopeRecord",
        "ServerUnavailable",
        "VersionConflict",
        "WriteRequest",
        "deterministic_id",
    ],
    "retrieval": [
        "BM25Params",
        "BM25Variant",
        "Embedder",
        "EmbedderUnavailable",
        "FastEmbedEmbedder",
        "HashingEmbedder",
        "IndexFollower",
        "LLMQueryRewriter",
        "LensPreset",
        "MemoryQuery",
        "MiniLMEmbedder",
        "OpenAIEmbedder",
        "RecallOrder",
        "RetrievalContext",
        "Retriever",
        "ScoredEntry",
        "ScoringConfig",
        "SearchEngine",
        "StructuredRetriever",
        "TagFilter",
        "UnknownLens",
        "default_embedder",
        "get_embedder",
        "known_lenses",
        "register_bm25_variant",
        "register_embedder",
        "register_lens",
    ],
    "memory": [
        "AgentMemory",
        "COLLECTIVE",
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
    ],
    "consolidation": [
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
    ],
    "integrations.langchain": [
        "BlackboardRetriever",
        "BlackboardVectorStore",
        "hit_document",
    ],
    "cli": [
        "NATIVE_THREAD_VARS",
        "cap_native_threads",
        "main",
    ],
    "workers": [
        "ROLES",
        "Worker",
        "WorkerSettings",
    ],
    "integrations.openai_agents": [
        "BlackboardSession",
        "ITEM_FIELD",
    ],
    # integrations: one module per framework, pinned by module (the package exports none)
    "integrations.langgraph": ["BlackboardStore"],
    "integrations.store_paths": [
        "ITEM_TAG",
        "NS_TAG_PREFIX",
        "check_filter",
        "compare",
        "item_key",
        "item_scope",
        "namespace_matches",
        "namespace_tag",
        "prefix_scopes",
        "unwrap",
        "value_matches",
        "wrap",
    ],
}

#: Names other parts, docs and checks rely on (the Contract of the design).
CONTRACT = {
    "blackboard": ["Blackboard", "BlackboardError", "Entry", "Event"],
    "memory": [
        "AgentMemory",
        "MemoryLevel",
        "MemoryQuery",
        "MemorySubscription",
        "Message",
        "ScoredEntry",
        "TagFilter",
    ],
}


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_all_is_pinned(package: str) -> None:
    assert sorted(importlib.import_module(package).__all__) == PUBLIC[package]


@pytest.mark.parametrize("package", sorted(PUBLIC))
def test_every_exported_name_resolves(package: str) -> None:
    mod = importlib.import_module(package)
    missing = [n for n in mod.__all__ if getattr(mod, n, None) is None]
    assert missing == []
    assert len(set(mod.__all__)) == len(mod.__all__)


def test_blackboard_exports_at_most_45_names() -> None:
    assert len(importlib.import_module("blackboard").__all__) <= 45


@pytest.mark.parametrize("package", sorted(CONTRACT))
def test_contract_names_are_exported(package: str) -> None:
    exported = set(importlib.import_module(package).__all__)
    assert set(CONTRACT[package]) <= exported


def test_gateway_exports_nothing() -> None:
    assert not hasattr(importlib.import_module("gateway"), "__all__")
