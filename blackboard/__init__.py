"""The blackboard substrate: scopes of entries on Redis, events, consumer groups."""

from __future__ import annotations

from .backlog import Backlog, backlog, settled
from .board import Blackboard
from .bus import Bus, BusCounts, GroupInfo
from .codec import as_str
from .consumer import Batch, ConsumeCounters, ConsumeOptions
from .dead_letters import AuditRecord, DeadLetter, audit_log, dead_letters, redrive
from .decay import evict_time, strength_at
from .edges_version import bump_edges_versions, edges_versions, version_string
from .entry import Entry, Event, EventType, ScopePolicy, value_text
from .errors import (
    AccessDenied,
    BlackboardError,
    ConfigMismatch,
    EntryTooLarge,
    InvalidArgument,
    InvalidKey,
    InvalidMetadata,
    InvalidScope,
    InvalidTag,
    InvalidValue,
    NotFound,
    ScopeDamaged,
    ScopeFull,
    ServerUnavailable,
    VersionConflict,
)
from .feeds import (
    newest_event_ids,
    newest_ids,
    read_feeds,
    read_ranges,
    read_scopes,
    read_scopes_or_pause,
)
from .fetch import EntryRef, fetch_entries
from .handler_loop import BatchHandler, handle_batches
from .ids import deterministic_id, new_ulid
from .keys import partition_of
from .lease import Lease, LeaseRows, LeaseTable
from .pending import BufferState, PendingBuffer
from .presence import Presence
from .probe import FeedProbe
from .ratelimit import RateDecision, RateLimiter
from .readiness import missing_scripts
from .reconnect import reconnect
from .records import EdgeDefinition, EdgeRecord, Records, ScopeRecord
from .redact import mask_url, redact
from .relay import relay_all
from .request import WriteRequest, encode_write
from .scope import Scope
from .scope_reads import (
    FeedHead,
    entries_across,
    entry_counts,
    feed_heads,
    scope_policies,
    scopes_holding,
)
from .scope_stats import STRENGTH_EDGES, ScopeStats, StrengthHistogram, scope_stats
from .server import RedisServer
from .settings import ClientSettings, settings_from_env
from .tasks import cancel_and_wait
from .tokens import TokenRecord, TokenStore
from .upkeep import SweepReport, TrimReport, Upkeep
from .validation import validate_scope, validate_tag, validate_tags

__all__ = [
    "STRENGTH_EDGES",
    "AccessDenied",
    "AuditRecord",
    "Backlog",
    "Batch",
    "BatchHandler",
    "Blackboard",
    "BlackboardError",
    "BufferState",
    "Bus",
    "BusCounts",
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
    "FeedHead",
    "FeedProbe",
    "GroupInfo",
    "InvalidArgument",
    "InvalidKey",
    "InvalidMetadata",
    "InvalidScope",
    "InvalidTag",
    "InvalidValue",
    "Lease",
    "LeaseRows",
    "LeaseTable",
    "NotFound",
    "PendingBuffer",
    "Presence",
    "RateDecision",
    "RateLimiter",
    "Records",
    "RedisServer",
    "Scope",
    "ScopeDamaged",
    "ScopeFull",
    "ScopePolicy",
    "ScopeRecord",
    "ScopeStats",
    "ServerUnavailable",
    "StrengthHistogram",
    "SweepReport",
    "TokenRecord",
    "TokenStore",
    "TrimReport",
    "Upkeep",
    "VersionConflict",
    "WriteRequest",
    "as_str",
    "audit_log",
    "backlog",
    "bump_edges_versions",
    "cancel_and_wait",
    "dead_letters",
    "deterministic_id",
    "edges_versions",
    "encode_write",
    "entries_across",
    "entry_counts",
    "evict_time",
    "feed_heads",
    "fetch_entries",
    "handle_batches",
    "mask_url",
    "missing_scripts",
    "new_ulid",
    "newest_event_ids",
    "newest_ids",
    "partition_of",
    "read_feeds",
    "read_ranges",
    "read_scopes",
    "read_scopes_or_pause",
    "reconnect",
    "redact",
    "redrive",
    "relay_all",
    "scope_policies",
    "scope_stats",
    "scopes_holding",
    "settings_from_env",
    "settled",
    "strength_at",
    "validate_scope",
    "validate_tag",
    "validate_tags",
    "value_text",
    "version_string",
]
