"""The blackboard substrate: scopes of entries on Redis, events, consumer groups."""

from __future__ import annotations

from .board import Blackboard, SweepReport, TrimReport
from .consumer import Batch, ConsumeOptions
from .entry import Entry, Event, EventType, ScopePolicy
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
from .reconnect import reconnect
from .request import WriteRequest
from .scope import Scope
from .scope_reads import scopes_holding
from .settings import ClientSettings
from .validation import validate_tag

__all__ = [
    "AccessDenied",
    "Batch",
    "Blackboard",
    "BlackboardError",
    "ClientSettings",
    "ConfigMismatch",
    "ConsumeOptions",
    "Entry",
    "EntryTooLarge",
    "Event",
    "EventType",
    "InvalidArgument",
    "InvalidKey",
    "InvalidMetadata",
    "InvalidScope",
    "InvalidTag",
    "InvalidValue",
    "NotFound",
    "Scope",
    "ScopeDamaged",
    "ScopeFull",
    "ScopePolicy",
    "ServerUnavailable",
    "SweepReport",
    "TrimReport",
    "VersionConflict",
    "WriteRequest",
    "reconnect",
    "scopes_holding",
    "validate_tag",
]
