"""Write requests: validated and encoded before anything is sent to Redis, and the entry
the write script's reply describes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .entry import Entry, decode_entry, scope_owner
from .errors import InvalidArgument
from .ids import is_entry_id, new_ulid
from .validation import (
    NAME_RULE,
    check_embedding,
    check_importance,
    check_size,
    check_ttl,
    encode_json,
    encode_metadata,
    is_name,
    validate_key,
    validate_tags,
)

__all__ = [
    "EncodedWrite",
    "Retire",
    "WriteRequest",
    "encode_write",
    "entry_from_write_reply",
    "reply_fields",
]


@dataclass(frozen=True, slots=True)
class WriteRequest:
    """One entry to write; ``ttl`` is seconds, ``importance`` and ``strength`` in [0, 1].

    ``key_mode`` says what a write with the ``key`` of a live entry does: ``"upsert"``
    updates that entry in place; ``"supersede"`` creates a new entry that takes the key and
    marks the old one superseded (beliefs change by supersession, never by rewrite).
    ``entry_id`` is normally left out (a ULID is made); a caller that retries must reuse
    the id of its first attempt, which is what makes the retry harmless. ``embedding`` is
    float32 bytes from the embedder named by ``embedder``. ``author`` names the writing
    agent where the scope does not (team, collective scopes): the write script records it
    only once the ACL has shown the connection's user may act as that agent (an agent's
    own scopes always record their owner); never read from ``metadata`` or ``tags``.
    """

    value: Any
    tags: Iterable[str] | None = None
    metadata: Mapping[str, Any] | None = None
    key: str | None = None
    ttl: float | None = None
    importance: float = 0.5
    strength: float = 1.0
    source: Sequence[str] = field(default_factory=tuple)
    entry_id: str | None = None
    embedding: bytes | None = None
    embedder: str | None = None
    key_mode: str = "upsert"
    author: str | None = None
    retire: Retire | None = None


@dataclass(frozen=True, slots=True)
class Retire:
    """What a ``key_mode="supersede"`` write makes of the entry it replaces, compare-and-set:
    the holder of the key must still be ``entry_id`` at ``version`` (else the write raises
    VersionConflict and writes nothing; the caller re-reads and retries). Its ``metadata``
    and ``value`` (``None``: unchanged) are then replaced by these, so the replaced belief's
    stored status tells the truth (``superseded``, ``superseded_by``). ``key``: the key the
    holder is stored under when it is not the request's own (a former form of it, such as
    a belief key from before kinds joined it); the request's key must then have no live
    holder, or the write raises VersionConflict."""

    entry_id: str
    version: int
    metadata: Mapping[str, Any]
    value: Any = None
    key: str | None = None


@dataclass(frozen=True, slots=True)
class EncodedWrite:
    """The ARGV of ``write.lua`` for one request, and what the client keeps of it."""

    entry_id: str
    args: tuple[str | bytes, ...]
    value: Any
    tags: tuple[str, ...]
    metadata: Mapping[str, Any]
    key: str | None
    importance: float
    strength: float
    source: tuple[str, ...]
    traceparent: str | None = None


def encode_write(req: WriteRequest, scope_id: str, max_entry_bytes: int,
                 traceparent: str | None = None) -> EncodedWrite:
    """Validate ``req`` and build its script arguments; raise before touching Redis.
    ``traceparent``: the W3C context of the write's span (:mod:`blackboard.tracing`),
    stored with the entry for its bus event; None (tracing off) sends nothing more."""
    entry_id = req.entry_id if req.entry_id is not None else new_ulid()
    if not isinstance(entry_id, str) or not is_entry_id(entry_id):
        raise InvalidArgument(f"entry id must match [0-9A-Za-z_-]{{1,64}}: {entry_id!r:.80}")
    tags = validate_tags(req.tags)
    key = validate_key(req.key) if req.key is not None else None
    value_json = encode_json(req.value, "value")
    meta_json = encode_metadata(req.metadata)
    check_size(value_json, meta_json, max_entry_bytes)
    importance = check_importance(req.importance)
    strength = check_importance(req.strength) if req.strength is not None else 1.0
    ttl_ms = check_ttl(req.ttl)
    if req.key_mode not in ("upsert", "supersede"):
        raise InvalidArgument(f"key_mode must be 'upsert' or 'supersede', not {req.key_mode!r:.40}")
    source = tuple(req.source)
    for s in source:
        if not isinstance(s, str) or not is_entry_id(s):
            raise InvalidArgument(f"source ids must be entry ids, got {s!r:.80}")
    if req.embedding is not None:
        check_embedding(req.embedding)
        if not req.embedder:
            raise InvalidArgument("an embedding needs the name of its embedder")
    args: tuple[str | bytes, ...] = (
        entry_id,
        value_json,
        json.dumps(list(tags), ensure_ascii=False),
        meta_json,
        key or "",
        repr(importance),
        repr(strength),
        "" if ttl_ms is None else str(ttl_ms),
        json.dumps(list(source)),
        req.embedding or b"",
        req.embedder or "",
        scope_id,
        req.key_mode,
        _check_author(req.author),
        *_retire_args(req, max_entry_bytes),
    )
    if traceparent is not None:
        # ARGV[20]: the optional retirement fields before it are '' when absent.
        args = (*args, *("",) * (19 - len(args)), traceparent)
    return EncodedWrite(
        entry_id=entry_id,
        args=args,
        value=json.loads(value_json),
        tags=tags,
        metadata=json.loads(meta_json),
        key=key,
        importance=importance,
        strength=strength,
        source=source,
        traceparent=traceparent,
    )


def _retire_args(req: WriteRequest, max_entry_bytes: int) -> tuple[str, ...]:
    """ARGV[15..19] of write.lua: the replaced holder's id, version, new metadata, new
    value ('' = unchanged) and the key it holds when another ('' = the request's); nothing
    when the request retires no holder."""
    r = req.retire
    if r is None:
        return ()
    if req.key_mode != "supersede" or req.key is None:
        raise InvalidArgument("retire needs key_mode='supersede' and a key")
    if not is_entry_id(r.entry_id) or isinstance(r.version, bool) or r.version < 1:
        raise InvalidArgument(f"retire names no stored entry: {r.entry_id!r:.80} v{r.version!r}")
    meta_json = encode_metadata(r.metadata)
    value_json = "" if r.value is None else encode_json(r.value, "value")
    check_size(value_json, meta_json, max_entry_bytes)
    held = validate_key(r.key) if r.key is not None and r.key != req.key else ""
    return (r.entry_id, str(r.version), meta_json, value_json, held)


def _check_author(author: object) -> str:
    if author is None:
        return ""
    if not is_name(author):
        raise InvalidArgument(f"author must be an agent id ({NAME_RULE}): {author!r:.80}")
    return author


def reply_fields(flat: Sequence[Any]) -> dict[bytes, bytes]:
    """A script's flat ``[field, value, ...]`` reply as a dict of bytes."""
    out: dict[bytes, bytes] = {}
    for i in range(0, len(flat) - 1, 2):
        k, v = flat[i], flat[i + 1]
        out[k if isinstance(k, bytes) else str(k).encode()] = (
            v if isinstance(v, bytes) else str(v).encode()
        )
    return out


def entry_from_write_reply(scope_id: str, enc: EncodedWrite, reply: Sequence[Any]) -> Entry:
    """The entry a write left, from ``write.lua``'s reply ``[status, id, field, value, ...]``.

    A created entry is built from what was sent plus the server's times and event id (no
    second read); any other status (an upsert, an idempotent retry) carries the whole hash.
    """
    status = reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])
    f = reply_fields(reply[2:])
    if status != "created":
        return decode_entry(scope_id, f)
    ts = int(f[b"created_at"])
    return Entry(
        id=enc.entry_id,
        scope=scope_id,
        value=enc.value,
        tags=frozenset(enc.tags),
        metadata=enc.metadata,
        key=enc.key,
        importance=enc.importance,
        strength=enc.strength,
        strength_at=ts,
        created_at=ts,
        updated_at=ts,
        expires_at=int(f[b"expires_at"]),
        version=1,
        source=enc.source,
        event_id=f[b"event_id"].decode(),
        embedding=None,
        embedder=None,
        author=scope_owner(scope_id) or _str(f.get(b"author")) or None,
        traceparent=enc.traceparent,
    )


def _str(b: bytes | None) -> str:
    return b.decode() if b else ""
