"""The error hierarchy of the blackboard.

Every failure a caller can act on is a :class:`BlackboardError`; the subclasses name the
problem. Validation errors are raised before anything is sent to Redis, so a rejected call
leaves Redis untouched.
"""

from __future__ import annotations

__all__ = [
    "AccessDenied",
    "BlackboardError",
    "ConfigMismatch",
    "EntryTooLarge",
    "InvalidArgument",
    "InvalidKey",
    "InvalidMetadata",
    "InvalidScope",
    "InvalidTag",
    "InvalidValue",
    "NotFound",
    "ScopeDamaged",
    "ScopeFull",
    "ServerUnavailable",
    "VersionConflict",
]


class BlackboardError(Exception):
    """Base class of every error this library raises on purpose."""


class InvalidArgument(BlackboardError, ValueError):
    """An argument is malformed; nothing was sent to Redis."""


class InvalidScope(InvalidArgument):
    """A scope id breaks the grammar ``segment(:segment)*``, segment ``[A-Za-z0-9_.-]+``."""


class InvalidTag(InvalidArgument):
    """A tag is empty, too long, or holds characters that cannot appear in a key name."""


class InvalidKey(InvalidArgument):
    """A logical entry key is empty, too long, or holds control characters."""


class InvalidValue(InvalidArgument):
    """A value is not JSON-serialisable (or nests too deeply, or holds invalid Unicode)."""


class InvalidMetadata(InvalidArgument):
    """Metadata is not a JSON object with string keys."""


class EntryTooLarge(InvalidArgument):
    """An entry's encoded value and metadata exceed the size limit (bytes)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"entry is {size} bytes encoded, over the limit of {limit} bytes")
        self.size = size
        self.limit = limit


class ScopeFull(BlackboardError):
    """The scope holds ``max_entries`` and its policy rejects further writes."""


class VersionConflict(BlackboardError):
    """A compare-and-set update found another version than the one expected."""

    def __init__(self, entry_id: str, expected: int, actual: int) -> None:
        super().__init__(
            f"entry {entry_id} is at version {actual}, not the expected {expected}"
        )
        self.entry_id = entry_id
        self.expected = expected
        self.actual = actual


class NotFound(BlackboardError, KeyError):
    """No live entry has that id (or key) in that scope."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want the plain sentence
        return str(self.args[0]) if self.args else "not found"


class ConfigMismatch(BlackboardError):
    """The client's configuration disagrees with the one pinned in Redis (e.g. partitions)."""


class ScopeDamaged(BlackboardError):
    """A scope's keys were changed outside the scripts (a key of the wrong type, a feed with
    no room for new ids): the call wrote nothing. ``blackboard check --repair`` mends it."""


class AccessDenied(BlackboardError, PermissionError):
    """The caller may not read or write that scope (refused by us or by Redis ACLs)."""


class ServerUnavailable(BlackboardError, ConnectionError):
    """Redis could not be reached after the configured retries."""
