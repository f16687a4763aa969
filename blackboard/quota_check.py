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
_SCOPE_KEYS = frozenset({"ix", "tags", "keys", "exp", "evict", "feed", "usage",
                         "removed", "toc", "tocin"})
_OWNED = re.compile(r"^((?:agent|team):[^:]+):owned$")

#: (owner, partition) -> [live entries, counted bytes]
Tally = dict[tuple[str, int], list[int]]
DriftFn = Callable[..., None]  # (scope, index, member, problem, harmless=False)


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


async def read_counters(client: Any, key: str, fields: tuple[str, ...]) -> list[int | None]:
    """A counter hash's fields (None: unreadable), read before the entries are counted."""
    return [await _int(client, key, f) for f in fields]


async def _settle(client: Any, key: str, before: list[int | None], want: list[int],
                  fields: tuple[str, ...], drift: Callable[..., None], repair: bool) -> None:
    """Compare counters read ``before`` the entries were counted, and again now, with
    ``want``. Counters that moved meanwhile (writes ran during the check) are noted, not
    repaired: ``want`` may miss those writes. Otherwise the repair adds the difference
    (HINCRBY composes with writes landing after the read; an unreadable counter is
    rewritten). An ABA pair of writes (+n then -n) during the count can escape this."""
    have = await read_counters(client, key, fields)
    if have == want:
        return
    if have != before:
        drift(f"counters {before} moved to {have} during the check (writes running); "
              "not repaired: run it again", harmless=True)
        return
    drift(f"counters {have}, the entries hold {want}")
    if not repair:
        return
    if None in have:
        await client.delete(key)
        await client.hset(key, mapping=dict(zip(fields, want, strict=True)))
        return
    for f, h, w in zip(fields, have, want, strict=True):
        if h is not None and w != h:
            await client.hincrby(key, f, w - h)


async def check_scope_usage(client: Any, sk: K.ScopeKeys, live: Iterable[str], drift: DriftFn,
                            repair: bool, tally: Tally, before: list[int | None]) -> None:
    """The scope's byte counter (``before``: read before its entries were listed) against
    its live entries; adds them to the owner's tally."""
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
    await _settle(client, sk.usage, before, [want], ("bytes",),
                  lambda problem, harmless=False: drift(sk.scope_id, "usage", "bytes", problem,
                                                        harmless),
                  repair)


OWNED_FIELDS = ("entries", "bytes")


async def owned_before(client: Any, partitions: int) -> dict[tuple[str, int], list[int | None]]:
    """Every owner's counters per partition, read before the scopes are counted."""
    out: dict[tuple[str, int], list[int | None]] = {}
    for p in range(partitions):
        base = f"{K.PartitionKeys(p).base}:s:"
        async for raw in client.scan_iter(match=base + "*:owned", count=1000):
            m = _OWNED.match(as_str(raw, "replace")[len(base):])
            if m:
                key = K.PartitionKeys(p).owned(m.group(1))
                out[(m.group(1), p)] = await read_counters(client, key, OWNED_FIELDS)
    return out


async def check_owned(client: Any, before: dict[tuple[str, int], list[int | None]],
                      tally: Tally, drift: DriftFn, repair: bool) -> None:
    """Every owner's per-partition counters against the sum over its scopes (tally); also
    counters of owners that hold nothing any more."""
    for owner, p in sorted(set(tally) | set(before)):
        def note(problem: str, harmless: bool = False, o: str = owner, q: int = p) -> None:
            drift(o, "owned", f"p{q}", problem, harmless)
        await _settle(client, K.PartitionKeys(p).owned(owner), before.get((owner, p), [0, 0]),
                      tally.get((owner, p), [0, 0]), OWNED_FIELDS, note, repair)


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
