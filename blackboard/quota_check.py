"""``blackboard check``'s part for quotas: the counters the scripts keep (rebuilt from the
entries by ``--repair``), and keys an agent invented under its own prefix with raw
commands, outside the key layout of :mod:`blackboard.keys` (reported with their size,
deleted by ``--repair``). See docs/security.md "Quotas"."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from . import keys as K
from .codec import as_str
from .errors import AccessDenied, ServerError
from .ids import is_entry_id
from .quotas import COUNTED_FIELDS, owner_of

#: Keys of a scope besides ``e:<id>`` and ``tag:<tag>`` (see :class:`blackboard.keys.ScopeKeys`).
_SCOPE_KEYS = frozenset({"ix", "tags", "keys", "exp", "evict", "feed", "usage"})
_OWNED = re.compile(r"^((?:agent|team):[^:]+):owned$")

#: (owner, partition) -> [live entries, counted bytes]
Tally = dict[tuple[str, int], list[int]]
DriftFn = Callable[[str, str, str, str], None]  # scope, index, member, problem


def new_tally() -> Tally:
    return defaultdict(lambda: [0, 0])


async def _int(client: Any, key: str, field: str) -> int | None:
    try:
        v = await client.hget(key, field)
    except ServerError:  # not a hash: raw commands
        return None
    try:
        return int(v) if v is not None else 0
    except ValueError:
        return None


async def check_scope_usage(client: Any, sk: K.ScopeKeys, live: Iterable[str], drift: DriftFn,
                            repair: bool, tally: Tally) -> None:
    """The scope's byte counter against its live entries; adds them to the owner's tally."""
    ids = list(live)
    pipe = client.pipeline(transaction=False)
    for i in ids:
        for f in COUNTED_FIELDS:
            pipe.hstrlen(sk.entry(i), f)
    want = sum(int(n) for n in await pipe.execute()) if ids else 0
    owner = owner_of(sk.scope_id)
    if owner:
        t = tally[(owner, sk.partition)]
        t[0] += len(ids)
        t[1] += want
    have = await _int(client, sk.usage, "bytes")
    if have == want:
        return
    drift(sk.scope_id, "usage", "bytes", f"counter {have}, the live entries hold {want} bytes")
    if repair:
        await client.delete(sk.usage)
        await client.hset(sk.usage, "bytes", want)


async def check_owned(client: Any, partitions: int, tally: Tally, drift: DriftFn,
                      repair: bool) -> None:
    """Every owner's per-partition counters against the sum over its scopes (tally); also
    counters of owners that hold nothing any more."""
    found = set(tally)
    for p in range(partitions):
        base = f"{K.PartitionKeys(p).base}:s:"
        async for raw in client.scan_iter(match=base + "*:owned", count=1000):
            m = _OWNED.match(as_str(raw, "replace")[len(base):])
            if m:
                found.add((m.group(1), p))
    for owner, p in sorted(found):
        key = K.PartitionKeys(p).owned(owner)
        want = tally.get((owner, p), [0, 0])
        have = [await _int(client, key, "entries"), await _int(client, key, "bytes")]
        if have == want:
            continue
        drift(owner, "owned", f"p{p}",
              f"counters {have[0]} entries / {have[1]} bytes, its scopes hold "
              f"{want[0]} / {want[1]}")
        if repair:
            await client.delete(key)
            await client.hset(key, mapping={"entries": want[0], "bytes": want[1]})


def _in_layout(rest: str, scopes: set[str]) -> bool:
    """Whether ``rest`` (a key after ``bb:{pN}:s:``) is a key the layout defines."""
    if _OWNED.match(rest):
        return True
    i = rest.find(":")
    while i != -1:
        if rest[:i] in scopes:
            suffix = rest[i + 1:]
            if suffix in _SCOPE_KEYS or (suffix.startswith("tag:") and len(suffix) > 4):
                return True
            if suffix.startswith("e:") and is_entry_id(suffix[2:]):
                return True
        i = rest.find(":", i + 1)
    return False


async def _size(client: Any, key: bytes) -> int:
    try:
        return int(await client.memory_usage(key, samples=0) or 0)
    except (AccessDenied, ServerError):
        return -1


async def check_invented(client: Any, pairs: Iterable[tuple[str, int]], partitions: int,
                         drift: DriftFn, repair: bool) -> dict[str, list[int]]:
    """Keys under ``bb:{pN}:s:`` no known scope's layout defines (an agent's raw writes):
    each is drift with its type and size (``MEMORY USAGE``); ``repair`` deletes them.
    -> owner (or the key's first two parts) -> [keys, bytes]."""
    scopes: dict[int, set[str]] = defaultdict(set)
    for s, p in pairs:
        scopes[p].add(s)
    per_owner: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for p in range(partitions):
        base = f"{K.PartitionKeys(p).base}:s:"
        stray = [raw async for raw in client.scan_iter(match=base + "*", count=1000)
                 if not _in_layout(as_str(raw, "replace")[len(base):], scopes[p])]
        if stray:
            # A scope created while we scanned: its first write added it to the partition's
            # scopes set in the same script that made its keys, so reading the set again
            # after the scan knows every scope whose keys the scan saw.
            scopes[p] |= {as_str(m, "replace")
                          for m in await client.smembers(K.PartitionKeys(p).scopes)}
        for raw in stray:
            key = as_str(raw, "replace")
            rest = key[len(base):]
            if _in_layout(rest, scopes[p]):
                continue
            size = await _size(client, raw)
            typ = as_str(await client.type(raw))
            who = owner_of(rest) or ":".join(rest.split(":")[:2])
            per_owner[who][0] += 1
            per_owner[who][1] += max(size, 0)
            drift(who, "invented", key[:300],
                  f"a {typ} of {size} bytes outside the key layout (raw commands)")
            if repair:
                await client.unlink(raw)
    return per_owner
