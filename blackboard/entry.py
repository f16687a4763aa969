"""The records that cross package boundaries: entries, events and scope policies."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "ENTRY_FIELDS",
    "Entry",
    "Event",
    "EventType",
    "ScopePolicy",
    "claimed_agents",
    "decode_entry",
    "decode_entry_values",
    "decode_event",
    "scope_owner",
    "value_text",
]


def scope_owner(scope_id: str) -> str | None:
    """The agent owning ``agent:<a>`` and ``agent:<a>:...`` scopes (``a``: its Redis user
    is the only agent user that may write their keys); None for any other scope."""
    parts = scope_id.split(":", 2)
    return parts[1] if len(parts) >= 2 and parts[0] == "agent" and parts[1] else None


def claimed_agents(entry: Entry) -> list[str]:
    """Agents an entry's own data names as its writer (metadata ``agent``/``actor``, tags
    ``agent:<a>``) other than its :attr:`~Entry.author`: claims, never authorship, sorted."""
    # On every hit of every recall's response: the common case (no claim) answers without
    # building a set.
    md = entry.metadata
    found = [t[6:] for t in entry.tags if t[:6] == "agent:" and len(t) > 6]
    if md and isinstance(md, Mapping):
        found += [v for k in ("agent", "actor") if isinstance(v := md.get(k), str) and v]
    if not found:
        return []
    return sorted(set(found) - {entry.author or ""})


#: Keys whose string value is what a person reads first in a structured memory.
TEXT_KEYS = ("text", "summary", "statement", "claim", "title", "content")


def value_text(value: Any, *, keys: Sequence[str] = TEXT_KEYS, canonical: bool = False) -> str:
    """A value as a person reads it: a string as is, a structured value's first text field
    among ``keys`` (``text``, ``summary``, ``statement``...) when it has one, else compact
    JSON.

    ``canonical`` is for text that is compared and hashed (consolidation's
    :func:`retrieval.text.entry_text` with ``main``): a blank field is not the text, and the
    JSON has sorted keys, so equal values read the same whatever their key order."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for k in keys:
            v = value.get(k)
            if isinstance(v, str) and (not canonical or v.strip()):
                return v
    if canonical:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return str(value)


def _clip(s: str, n: int = 60) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


class EventType(StrEnum):
    WRITTEN = "written"
    UPDATED = "updated"
    DELETED = "deleted"
    EXPIRED = "expired"
    EVICTED = "evicted"
    REINFORCED = "reinforced"


@dataclass(frozen=True, slots=True)
class Entry:
    """One stored memory entry.

    Times are integer milliseconds since the epoch (server clock); ``expires_at`` is 0 when
    the entry does not expire. ``strength`` is the value stored at ``strength_at``; the
    current, decayed strength is computed from it at read time (see :mod:`memory.decay`).
    ``embedding`` is float32 bytes (``dim * 4``) produced by ``embedder`` when present.
    """

    id: str
    scope: str
    value: Any
    tags: frozenset[str] = frozenset()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    key: str | None = None
    importance: float = 0.5
    strength: float = 1.0
    strength_at: int = 0
    reinforcements: int = 0
    reinforced_by: tuple[str, ...] = ()
    created_at: int = 0
    updated_at: int = 0
    expires_at: int = 0
    version: int = 1
    source: tuple[str, ...] = ()
    event_id: str = ""
    embedding: bytes | None = None
    embedder: str | None = None
    superseded_by: str | None = None
    #: Who wrote it, as the write script established it (never taken from the value,
    #: metadata or tags): see :mod:`blackboard.authorship`. None: not established (an
    #: entry written by the dataflow, or before authorship was recorded).
    author: str | None = None
    #: Feedback from use (:mod:`blackboard.feedback`): agents that judged the entry after a
    #: recall, and those of them that found it helpful (each agent counted once).
    uses: int = 0
    helpful: int = 0
    #: The W3C traceparent of the write that made this content (:mod:`blackboard.tracing`);
    #: None when it was not traced.
    traceparent: str | None = None

    def expired(self, now_ms: int) -> bool:
        return 0 < self.expires_at <= now_ms

    @property
    def text(self) -> str:
        """The value as a person reads it (see :func:`value_text`)."""
        return value_text(self.value)

    def __repr__(self) -> str:
        # The fields a person looks for; every field stays reachable as an attribute.
        tags = ",".join(sorted(self.tags))
        key = f" key={self.key!r}" if self.key else ""
        return (f"<Entry {self.id} {self.scope} v{self.version}{key} tags=[{tags}] "
                f"{_clip(self.text)!r}>")


@dataclass(frozen=True, slots=True)
class Event:
    """One event of a scope feed or partition bus.

    ``id`` is the stream id in the stream it was read from (feed or bus); ``at`` is the
    server time of the mutation in ms.
    """

    id: str
    scope: str
    type: EventType
    entry_id: str
    version: int
    tags: frozenset[str]
    at: int
    partition: int | None = None
    #: A re-driven dead letter (blackboard/dead_letters.py) is for this consumer group
    #: only; other groups' readers ack it unhandled. None: for every group.
    only: str | None = None
    #: The W3C traceparent of the traced write behind a bus event (:mod:`blackboard.tracing`);
    #: None for untraced writes, feed events and events from before it existed.
    traceparent: str | None = None


@dataclass(frozen=True, slots=True)
class ScopePolicy:
    """Limits a scope enforces inside the write script (stored in the scope's cfg hash).

    ``ttl`` and ``decay_tick`` are seconds; ``max_entries`` 0 means unlimited;
    ``on_full`` is ``"evict"`` (drop the weakest) or ``"reject"`` (raise ScopeFull).
    ``decay_rate`` is per tick, in [0, 1); 0 disables decay.
    """

    max_entries: int = 0
    on_full: str = "evict"
    max_entry_bytes: int = 1 << 20
    ttl: float | None = None
    decay_rate: float = 0.0
    decay_tick: float = 3600.0
    evict_threshold: float = 0.1
    feed_maxlen: int = 10_000
    #: Quota on the bytes of the scope's live entries (docs/security.md "Quotas"); 0 = none.
    max_bytes: int = 64 << 20

    def __post_init__(self) -> None:
        from .errors import InvalidArgument

        if self.max_entries < 0:
            raise InvalidArgument("max_entries must be >= 0")
        if self.on_full not in ("evict", "reject"):
            raise InvalidArgument("on_full must be 'evict' or 'reject'")
        if not 1 <= self.max_entry_bytes <= 512 << 20:
            raise InvalidArgument("max_entry_bytes must be between 1 and 512 MiB")
        if self.ttl is not None and not self.ttl > 0:
            raise InvalidArgument("ttl must be positive seconds or None")
        if not 0.0 <= self.decay_rate < 1.0:
            raise InvalidArgument("decay_rate must be in [0, 1)")
        if not self.decay_tick > 0:
            raise InvalidArgument("decay_tick must be positive seconds")
        if not 0.0 <= self.evict_threshold < 1.0:
            raise InvalidArgument("evict_threshold must be in [0, 1)")
        if self.feed_maxlen < 1:
            raise InvalidArgument("feed_maxlen must be >= 1")
        if self.max_bytes < 0:
            raise InvalidArgument("max_bytes must be >= 0 (0 = no byte quota)")

    def to_redis(self) -> dict[str, str]:
        return {
            "max_entries": str(self.max_entries),
            "on_full": self.on_full,
            "max_entry_bytes": str(self.max_entry_bytes),
            "ttl_ms": str(int(self.ttl * 1000)) if self.ttl else "0",
            "decay_rate": repr(self.decay_rate),
            "decay_tick_ms": str(int(self.decay_tick * 1000)),
            "evict_threshold": repr(self.evict_threshold),
            "feed_maxlen": str(self.feed_maxlen),
            "max_bytes": str(self.max_bytes),
        }

    @classmethod
    def from_redis(cls, h: Mapping[bytes, bytes]) -> ScopePolicy:
        if not h:
            return cls()
        g = {k.decode(): v.decode() for k, v in h.items()}
        ttl_ms = int(g.get("ttl_ms", "0"))
        return cls(
            max_entries=int(g.get("max_entries", 0)),
            on_full=g.get("on_full", "evict"),
            max_entry_bytes=int(g.get("max_entry_bytes", 1 << 20)),
            ttl=ttl_ms / 1000 if ttl_ms else None,
            decay_rate=float(g.get("decay_rate", 0.0)),
            decay_tick=int(g.get("decay_tick_ms", 3_600_000)) / 1000,
            evict_threshold=float(g.get("evict_threshold", 0.1)),
            feed_maxlen=int(g.get("feed_maxlen", 10_000)),
            max_bytes=int(g.get("max_bytes", 64 << 20)),
        )


def _s(v: bytes | None, default: str = "") -> str:
    return v.decode("utf-8") if v is not None else default


#: Stored JSON that most entries carry, decoded without the parser (hot on the worker's
#: read path: every consolidated entry passes here).
_EMPTY_LIST = (b"[]", b"", None)
_EMPTY_OBJECT = (b"{}", b"", None)


#: ``json.loads`` of bytes first sniffs the encoding; ours is always UTF-8, and decoding it
#: ourselves then parsing the str is about 2.5x faster.
_json_str = json.JSONDecoder().decode


def _json(v: bytes | None) -> Any:
    if v is None:
        raise ValueError("missing JSON field")
    return _json_str(v.decode("utf-8"))


def _list(v: bytes | None) -> Any:
    return [] if v in _EMPTY_LIST else _json(v)


#: The hash fields :func:`decode_entry` reads (a batch read fetches only these).
ENTRY_FIELDS: tuple[str, ...] = (
    "id", "scope", "value", "tags", "metadata", "key", "importance", "strength",
    "strength_at", "reinforcements", "reinforced_by", "created_at", "updated_at",
    "expires_at", "version", "source", "event_id", "embedding", "embedder", "superseded_by",
    "author", "uses", "helpful", "tp",
)  # fmt: skip
ENTRY_FIELDS_B: tuple[bytes, ...] = tuple(f.encode() for f in ENTRY_FIELDS)


def decode_entry(scope: str, h: Mapping[bytes, bytes | None]) -> Entry:
    """An :class:`Entry` from the fields of its Redis hash."""
    return decode_entry_values(scope, [h.get(f) for f in ENTRY_FIELDS_B])


def decode_entry_values(scope: str, values: Sequence[bytes | None]) -> Entry:
    """An :class:`Entry` from its hash's values in :data:`ENTRY_FIELDS` order (an HMGET
    reply); ``scope`` stands in for a missing scope field."""
    (
        id_, scope_, value, tags, meta, key, importance, strength, strength_at,
        reinforcements, reinforced_by, created_at, updated_at, expires_at, version, source,
        event_id, emb, embedder, superseded_by, author, uses, helpful, tp,
    ) = values  # fmt: skip
    sid = _s(scope_, scope)
    return Entry(
        id=_s(id_),
        scope=sid,
        value=_json(value),
        tags=frozenset(_list(tags)),
        metadata={} if meta in _EMPTY_OBJECT else _json(meta),
        key=_s(key) or None,
        importance=float(importance or 0.5),
        strength=float(strength or 1.0),
        strength_at=int(strength_at or 0),
        reinforcements=int(reinforcements or 0),
        reinforced_by=tuple(_list(reinforced_by)),
        created_at=int(created_at or 0),
        updated_at=int(updated_at or 0),
        expires_at=int(expires_at or 0),
        version=int(version or 1),
        source=tuple(_list(source)),
        event_id=_s(event_id),
        embedding=emb if emb else None,
        embedder=_s(embedder) or None,
        superseded_by=_s(superseded_by) or None,
        # the owner of an agent scope is its only possible writer (the ACL): the stored
        # field, which the owner could rewrite with raw commands, does not override it
        author=scope_owner(sid) or _s(author) or None,
        uses=int(uses or 0),
        helpful=int(helpful or 0),
        traceparent=_s(tp) or None,
    )


_EVENT_TYPES = {t.value.encode(): t for t in EventType}


def decode_event(
    stream_id: bytes | str, f: Mapping[bytes, bytes], partition: int | None = None
) -> Event:
    """An :class:`Event` from a stream entry's fields; ValueError for an unknown type."""
    sid = stream_id.decode() if isinstance(stream_id, bytes) else stream_id
    raw_type = f.get(b"type")
    etype = _EVENT_TYPES.get(raw_type) if isinstance(raw_type, bytes) else None
    if etype is None:
        etype = EventType(_s(raw_type))  # str input, or the ValueError naming the bad type
    return Event(
        id=sid,
        scope=_s(f.get(b"scope")),
        type=etype,
        entry_id=_s(f.get(b"entry")),
        version=int(f.get(b"version") or 0),
        tags=frozenset(_list(f.get(b"tags"))),
        at=int(f.get(b"at") or 0),
        partition=partition,
        only=_s(f[b"only"]) if b"only" in f else None,
        traceparent=_s(f[b"traceparent"]) if b"traceparent" in f else None,
    )
