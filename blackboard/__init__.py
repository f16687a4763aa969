"""The blackboard substrate: scopes of entries on Redis, events, consumer groups.

What an application uses is exported here: the :class:`Blackboard` and what its methods
take and return (scopes, entries, events, the consumer's batches and options, leases, the
registry's records, dead letters), the settings, the embedded server and the errors. Every
other operation is a method of the blackboard or of a handle it hands out (``bb.reads``,
``bb.dead_letters``, ``bb.progress``, ``bb.edges_versions``, ``bb.relays``...); the layers
above import the few helpers they share with the substrate from its modules.
"""

from __future__ import annotations

from .board import Blackboard
from .consumer import Batch, ConsumeCounters, ConsumeOptions
from .dead_letters import AuditRecord, DeadLetter
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
from .handler_loop import BatchHandler
from .ids import deterministic_id
from .lease import Lease, LeaseTable
from .reads import EntryRef
from .records import EdgeDefinition, EdgeRecord, Records, ScopeRecord
from .request import WriteRequest
from .scope import Scope
from .server import RedisServer
from .settings import ClientSettings

__all__ = [
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
]
