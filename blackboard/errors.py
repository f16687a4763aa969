"""The error hierarchy of the blackboard, and of every package built on it.

Every failure a caller can act on is a :class:`BlackboardError`; the subclasses name the
problem. Validation errors are raised before anything is sent to Redis, so a rejected call
leaves Redis untouched. Redis's own errors never leave this package as redis-py's types:
:mod:`blackboard.redis_errors` translates each at the client every module here calls
through, and keeps Redis's words in :attr:`BlackboardError.redis_message`.

The whole tree (``pkg.module:`` marks classes defined above this package)::

    BlackboardError
    ├── InvalidArgument (ValueError)
    │   ├── InvalidScope
    │   ├── InvalidTag
    │   ├── InvalidKey
    │   ├── InvalidValue
    │   ├── InvalidMetadata
    │   ├── EntryTooLarge
    │   ├── retrieval.lens: UnknownLens
    │   ├── memory.errors: InvalidEdge
    │   │   └── memory.errors: EdgeCycle
    │   ├── memory.errors: NotABelief
    │   └── memory.errors: InvalidClaim
    ├── ScopeFull
    ├── VersionConflict
    │   └── memory.errors: EdgeVersionConflict
    ├── NotFound (KeyError)
    ├── ConfigMismatch
    ├── ScopeDamaged                 Redis: WRONGTYPE
    ├── AccessDenied (PermissionError)   Redis: NOPERM, "ACL failure in script"
    │   └── blackboard.acl_check: DefaultUserOpen
    ├── ServerUnavailable (ConnectionError)   Redis: connection, timeout, LOADING, READONLY
    │   ├── LoginRefused             Redis: a refused AUTH
    │   └── blackboard.retries: ReplyMaybeLost   a lost connection, not retried
    ├── OutOfMemory                  Redis: OOM (maxmemory reached under noeviction)
    ├── QuotaExceeded                a scope's or owner's quota (entries, bytes) is full
    ├── ScriptMissing                Redis: NOSCRIPT (the scripts reload it themselves)
    ├── ConcurrentChange             Redis: a WATCHed key changed (EXEC aborted)
    ├── ServerError                  Redis: any other error reply, in its own words
    ├── NotReplicated                WAIT / WAITAOF: fewer acknowledgements than asked
    ├── retrieval.embedders.base: EmbedderUnavailable (ImportError)
    │   └── retrieval.embedders.openai: EmbeddingServiceError
    ├── retrieval.completeness: EmbeddingBacklog (TimeoutError)
    ├── memory.errors: SemanticRecallUnavailable (NotImplementedError)
    ├── memory.remote_decode: RateLimited
    ├── consolidation.errors: ConsolidationError
    │   ├── consolidation.params: InvalidParams (ValueError)
    │   ├── consolidation.transformer: UnknownTransformer (LookupError)
    │   └── consolidation.llm.errors: LLMError
    │       ├── consolidation.llm.errors: InvalidLLMOutput
    │       ├── consolidation.llm.errors: BudgetExceeded
    │       └── consolidation.llm.errors: LLMUnavailable
    └── gateway.refusals: GatewayError
        ├── gateway.refusals: Unauthorized
        ├── gateway.refusals: Forbidden
        ├── gateway.refusals: BodyTooLarge
        ├── gateway.refusals: TooManyRequests
        ├── gateway.refusals: InvalidParameter
        ├── gateway.refusals: Misdirected
        ├── gateway.refusals: BookkeepingUnavailable
        └── gateway.routes.dashboard: NotConfirmed

(Classes in parentheses are the builtin exceptions a class also derives from, so
``except ValueError`` and the like keep working.)
"""

from __future__ import annotations

__all__ = [
    "AccessDenied",
    "BlackboardError",
    "ConcurrentChange",
    "ConfigMismatch",
    "EntryTooLarge",
    "InvalidArgument",
    "InvalidKey",
    "InvalidMetadata",
    "InvalidScope",
    "InvalidTag",
    "InvalidValue",
    "LoginRefused",
    "NotFound",
    "NotReplicated",
    "OutOfMemory",
    "QuotaExceeded",
    "ScopeDamaged",
    "ScopeFull",
    "ScriptMissing",
    "ServerError",
    "ServerUnavailable",
    "VersionConflict",
]


class BlackboardError(Exception):
    """Base class of every error this library raises on purpose."""

    #: Redis's (or its client's) own words when this error translates one of Redis's
    #: errors (:mod:`blackboard.redis_errors`); None when the library raised it itself.
    redis_message: str | None = None


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
    """The caller may not read or write that scope (refused by us or by Redis ACLs);
    ``by_server``: Redis itself refused (``NOPERM``, or an ACL failure inside a script),
    and the message names the command and key as Redis did."""

    by_server = False

    def __init__(self, *args: object, by_server: bool = False) -> None:
        super().__init__(*args)
        self.by_server = by_server


class ServerUnavailable(BlackboardError, ConnectionError):
    """Redis could not be reached after the configured retries (or timed out, is still
    loading its data, or is a read-only replica / a cluster without a master for the slot)."""


class LoginRefused(ServerUnavailable):
    """Redis refused the login: wrong user name or password, or a disabled (revoked) user."""


class OutOfMemory(BlackboardError):
    """Redis is at ``maxmemory`` and refuses writes (``noeviction``): nothing was written."""


class QuotaExceeded(BlackboardError):
    """A write would take a scope or its owner past a quota (docs/security.md "Quotas");
    nothing was written. ``quota`` names it (``scope_bytes``, ``agent_entries``,
    ``agent_bytes``, ``team_entries``, ``team_bytes``); ``limit``, ``use`` (before the
    write), ``need`` (what the write adds) and ``alone`` (what the entry holds by itself).
    ``never_fits``: the entry alone exceeds the limit (REST 413), else the quota is full
    (REST 507)."""

    def __init__(self, quota: str, limit: int, use: int, need: int, scope: str = "",
                 alone: int = 0) -> None:
        where = f" of scope {scope!r}" if scope else ""
        alone = alone or need
        super().__init__(f"quota {quota}{where} exceeded: limit {limit}, in use {use}, "
                         f"this write adds {need} (the entry alone {alone}); nothing was "
                         "written")
        self.quota, self.limit, self.use, self.need, self.alone = quota, limit, use, need, alone

    @property
    def never_fits(self) -> bool:
        return self.alone > self.limit


class ScriptMissing(BlackboardError):
    """Redis does not hold a script (``NOSCRIPT``, after a restart or SCRIPT FLUSH); the
    library loads it and runs it again, so a caller sees this only if that is refused."""


class ConcurrentChange(BlackboardError):
    """A key watched for a compare-and-set changed before the write (the transaction was
    aborted, nothing written); the registry's records retry or report it."""


class ServerError(BlackboardError):
    """Redis answered with an error the library has no better name for; the message is
    Redis's own."""


class NotReplicated(BlackboardError):
    """A write under ``durability="replicated"`` was applied but did not get the asked
    acknowledgements within the timeout: it stays on the master (as a default write
    does), not yet on ``wanted`` replicas (``WAIT``) or fsynced (``WAITAOF``; ``local`` 0:
    not even the master's AOF yet). ``replicas`` and ``local`` say how many acknowledged;
    retrying the write is safe (writes are idempotent by id) and waits again."""

    def __init__(self, what: str, *, wanted: int, replicas: int, local: int | None = None,
                 aof: bool = False) -> None:
        self.wanted, self.replicas, self.local, self.aof = wanted, replicas, local, aof
        how = "fsynced to the AOF of" if aof else "acknowledged by"
        tail = "" if local is None else f", {local} local AOF fsync(s)"
        state = ("applied on the master, not yet fsynced nor replicated" if local == 0
                 else "durable on the master, not yet replicated")
        super().__init__(
            f"{what} was written but {how} {replicas} of {wanted} replica(s) in time"
            f"{tail}: {state}"
        )
