"""Validation of everything a caller sends, done before anything reaches Redis.

Scope ids and tags become parts of key names, so their grammar excludes the characters
that would break hash tags (``{}``), glob patterns used by ACLs (``*?[]\\``), whitespace
and control characters. Values and metadata must be strict JSON (no NaN, no lone
surrogates) and nest at most :data:`MAX_DEPTH` levels.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

from .errors import (
    EntryTooLarge,
    InvalidArgument,
    InvalidKey,
    InvalidMetadata,
    InvalidScope,
    InvalidTag,
    InvalidValue,
)
from .keys import ENTRY, TAG

__all__ = [
    "DEFAULT_MAX_ENTRY_BYTES",
    "MAX_DEPTH",
    "MAX_KEY_LEN",
    "MAX_NAME_LEN",
    "MAX_SCOPE_LEN",
    "MAX_TAGS",
    "MAX_TAG_LEN",
    "NAME_PATTERN",
    "NAME_RULE",
    "RESERVED_SEGMENTS",
    "SEGMENT_CHARS",
    "TAG_PATTERN",
    "check_embedding",
    "check_importance",
    "check_ttl",
    "encode_json",
    "is_name",
    "validate_key",
    "validate_name",
    "validate_scope",
    "validate_tag",
    "validate_tags",
]

MAX_SCOPE_LEN = 200
MAX_TAG_LEN = 128
MAX_TAGS = 64
MAX_KEY_LEN = 512
MAX_DEPTH = 32
DEFAULT_MAX_ENTRY_BYTES = 1 << 20

MAX_NAME_LEN = 64
#: The characters of one segment of a scope id.
SEGMENT_CHARS = "[A-Za-z0-9_.-]"
_SCOPE_RE = re.compile(f"{SEGMENT_CHARS}+(?::{SEGMENT_CHARS}+)*")
#: A name: an agent id, a team, an edge, a transformer. Its characters are a scope
#: segment's, since agent ids and teams become segments of scope ids, Redis user names and
#: ACL key patterns. The rule as callers' messages quote it, and as a JSON Schema / FastAPI
#: ``pattern`` (no look-around: pydantic's regex engine has none, so the reserved segments
#: are refused by :func:`validate_name`, not by the pattern).
NAME_RULE = f"{SEGMENT_CHARS}{{1,{MAX_NAME_LEN}}}"
NAME_PATTERN = f"^{NAME_RULE}$"
_NAME_RE = re.compile(NAME_RULE)
# A scope's keys are ``<prefix of scope>:<suffix>``; the only suffixes holding a ':' are
# ``e:<entry id>`` and ``tag:<tag>`` (keys.ENTRY, keys.TAG). So the keys of a scope ``S:R``
# can equal a key of scope ``S`` only when R starts with the segment ``e`` or ``tag``
# (``S:tag:t`` has ``S:tag:t:ix``, the tag set ``t:ix`` of ``S``). Refusing those two
# segments anywhere makes every (scope, suffix) key distinct; tests/blackboard/
# test_validation.py proves it over generated scopes, tags and entry ids.
RESERVED_SEGMENTS = frozenset({ENTRY.rstrip(":"), TAG.rstrip(":")})
# Tags may hold any printable character except those that are special in key names or
# ACL glob patterns; ':' is allowed (``action_type:search``).
_TAG_NOT = r"\s\x00-\x1f\x7f-\x9f{}*?\[\]\\"
_TAG_BAD = re.compile(f"[{_TAG_NOT}]")
#: The same grammar as a JSON Schema ``pattern`` (for the gateway's OpenAPI schema).
TAG_PATTERN = f"^[^{_TAG_NOT}]{{1,{MAX_TAG_LEN}}}$"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def validate_scope(scope_id: object) -> str:
    """Return ``scope_id`` if it is a valid scope id, else raise :class:`InvalidScope`."""
    if not isinstance(scope_id, str):
        raise InvalidScope(f"scope id must be a str, not {type(scope_id).__name__}")
    if not scope_id or len(scope_id) > MAX_SCOPE_LEN:
        raise InvalidScope(f"scope id must be 1 to {MAX_SCOPE_LEN} characters: {scope_id!r:.80}")
    if not _SCOPE_RE.fullmatch(scope_id):
        raise InvalidScope(
            f"scope id {scope_id!r:.80} must be segments of {SEGMENT_CHARS} separated by ':'"
        )
    reserved = RESERVED_SEGMENTS.intersection(scope_id.split(":"))
    if reserved:
        raise InvalidScope(
            f"scope id {scope_id!r:.80} has the segment {min(reserved)!r}, reserved for the "
            "keys of entries and tags (a scope with it would share keys with another)"
        )
    return scope_id


def is_name(name: object) -> TypeGuard[str]:
    """Whether ``name`` follows :data:`NAME_RULE` (an edge or transformer name may be a
    reserved segment: it never becomes part of a scope id)."""
    return isinstance(name, str) and _NAME_RE.fullmatch(name) is not None


def validate_name(name: object, what: str) -> str:
    """Return ``name`` if it may name an agent or a team, else raise
    :class:`InvalidArgument` naming ``what``: :data:`NAME_RULE`, and not one of the
    :data:`RESERVED_SEGMENTS`, since it becomes a segment of its scopes' ids (a reserved
    one used to pass ``acl grant`` and fail at provisioning, half-written)."""
    if not is_name(name):
        raise InvalidArgument(f"{what} must match {NAME_RULE}: {name!r:.80}")
    if name in RESERVED_SEGMENTS:
        raise InvalidArgument(f"{what} {name!r} is reserved in scope ids "
                              f"({', '.join(sorted(RESERVED_SEGMENTS))}): choose another")
    return name


def validate_tag(tag: object) -> str:
    """Return ``tag`` if valid, else raise :class:`InvalidTag`."""
    if not isinstance(tag, str):
        raise InvalidTag(f"tag must be a str, not {type(tag).__name__}")
    if not tag or len(tag) > MAX_TAG_LEN:
        raise InvalidTag(f"tag must be 1 to {MAX_TAG_LEN} characters: {tag!r:.80}")
    if _TAG_BAD.search(tag):
        raise InvalidTag(
            f"tag {tag!r:.80} holds whitespace, a control character or one of {{}}*?[]\\"
        )
    try:
        tag.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidTag(f"tag {tag!r:.80} is not valid Unicode") from None
    return tag


def validate_tags(tags: Iterable[str] | None) -> tuple[str, ...]:
    """Validated, de-duplicated, sorted tags."""
    if tags is None:
        return ()
    if isinstance(tags, str | bytes):
        raise InvalidTag("tags must be a collection of str, not a single string")
    out = sorted({validate_tag(t) for t in tags})
    if len(out) > MAX_TAGS:
        raise InvalidTag(f"at most {MAX_TAGS} tags per entry, got {len(out)}")
    return tuple(out)


def validate_key(key: object) -> str:
    """Return a valid logical key (any printable text up to :data:`MAX_KEY_LEN`)."""
    if not isinstance(key, str):
        raise InvalidKey(f"key must be a str, not {type(key).__name__}")
    if not key or len(key) > MAX_KEY_LEN:
        raise InvalidKey(f"key must be 1 to {MAX_KEY_LEN} characters: {key!r:.80}")
    if _CONTROL.search(key):
        raise InvalidKey(f"key {key!r:.80} holds a control character")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidKey(f"key {key!r:.80} is not valid Unicode") from None
    return key


def _depth_ok(value: Any, depth: int) -> bool:
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, Mapping):
        return all(_depth_ok(v, depth + 1) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_depth_ok(v, depth + 1) for v in value)
    return True


def encode_json(value: Any, what: str = "value") -> str:
    """Strict JSON text of ``value``; raise :class:`InvalidValue` naming the problem."""
    err = InvalidMetadata if what == "metadata" else InvalidValue
    if not _depth_ok(value, 0):
        raise err(f"{what} nests deeper than {MAX_DEPTH} levels")
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise err(f"{what} is not JSON-serialisable: {exc}") from None
    except RecursionError:
        raise err(f"{what} nests too deeply (or refers to itself)") from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise err(f"{what} holds a string that is not valid Unicode (lone surrogate)") from None
    return text


def encode_metadata(metadata: Mapping[str, Any] | None) -> str:
    if metadata is None:
        return "{}"
    if not isinstance(metadata, Mapping):
        raise InvalidMetadata(f"metadata must be a mapping, not {type(metadata).__name__}")
    for k in metadata:
        if not isinstance(k, str):
            raise InvalidMetadata(f"metadata keys must be str, got {k!r:.40}")
    return encode_json(dict(metadata), "metadata")


def check_size(value_json: str, metadata_json: str, limit: int) -> None:
    size = len(value_json.encode("utf-8")) + len(metadata_json.encode("utf-8"))
    if size > limit:
        raise EntryTooLarge(size, limit)


def check_importance(importance: object) -> float:
    if isinstance(importance, bool) or not isinstance(importance, int | float):
        raise InvalidArgument(f"importance must be a number in [0, 1], got {importance!r:.40}")
    if not (0.0 <= float(importance) <= 1.0):
        raise InvalidArgument(f"importance must be in [0, 1], got {importance}")
    return float(importance)


def check_ttl(ttl: object) -> int | None:
    """TTL in seconds (int or float) -> milliseconds; ``None`` means the scope default."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise InvalidArgument(f"ttl must be seconds as a number, got {ttl!r:.40}")
    if not math.isfinite(ttl) or ttl <= 0:
        raise InvalidArgument(f"ttl must be a positive, finite number of seconds, got {ttl}")
    # compared in seconds first: a huge float times 1000 is infinity, which ceil refuses
    if ttl > 10 * 365 * 86400:
        raise InvalidArgument(f"ttl must be at most ten years, got {ttl} s")
    return math.ceil(ttl * 1000)


def check_embedding(vec: object, *, empty_ok: bool = True) -> bytes:
    """A float32 vector as bytes: a multiple of 4 long. Empty bytes clear an entry's
    embedding where that is allowed (a write or update), never where one is attached."""
    if not isinstance(vec, bytes) or len(vec) % 4 or not (vec or empty_ok):
        raise InvalidArgument("embedding must be float32 bytes (a multiple of 4 long)")
    return vec
