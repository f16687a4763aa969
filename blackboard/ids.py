"""Entry ids: ULIDs for new entries, content hashes for derived ones.

A ULID is 26 Crockford base-32 characters: 48 bits of milliseconds then 80 random bits,
so ids sort by creation time. Within one millisecond the generator increments the random
part, keeping ids of one process strictly increasing.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time

__all__ = ["deterministic_id", "is_entry_id", "new_ulid", "ulid_time_ms"]

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_ID_RE = re.compile(r"^[0-9A-Za-z_-]{1,64}$")
_lock = threading.Lock()
_last_ms = 0
_last_rand = 0


def _encode(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_ulid(now_ms: int | None = None) -> str:
    """A new, monotonic ULID (26 chars)."""
    global _last_ms, _last_rand
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    with _lock:
        if ms <= _last_ms:
            ms = _last_ms
            rand = (_last_rand + 1) & ((1 << 80) - 1)
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        _last_ms, _last_rand = ms, rand
    return _encode(ms, 10) + _encode(rand, 16)


def ulid_time_ms(ulid: str) -> int:
    """The millisecond timestamp a ULID carries."""
    value = 0
    for ch in ulid[:10].upper():
        value = value * 32 + _ALPHABET.index(ch)
    return value


def deterministic_id(*parts: str) -> str:
    """A stable id for a derived entry: ``d`` + 25 hex chars of sha256 over the parts.

    Used for outputs of transformers (edge, target scope, sorted source ids), so a replay
    of the same inputs produces the same id and the write script turns it into a no-op.
    """
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return "d" + digest[:25]


def is_entry_id(value: str) -> bool:
    """Whether ``value`` is usable as an entry id (it becomes part of a key name)."""
    return bool(_ID_RE.match(value))
