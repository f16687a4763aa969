"""Reads over several scopes in one round trip, for the layers above the substrate.

A :class:`Scope` method reads one scope; an agent's memory map, its ``locate`` and an index
follower ask the same question of many scopes at once, and each answer here is one
pipeline (a cluster client splits it by slot) instead of a round trip per scope.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .codec import as_str
from .entry import Entry, ScopePolicy, decode_entry
from .errors import InvalidArgument
from .ids import is_entry_id

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = [
    "FeedHead",
    "entries_across",
    "entry_counts",
    "feed_heads",
    "scope_policies",
    "scopes_holding",
]


@dataclass(frozen=True, slots=True)
class FeedHead:
    """Where a scope's feed stands and what an index of it needs to start.

    ``newest``: id of the newest retained event (``0-0`` when empty). ``kept``: whether the
    event asked about is still retained (False when none was asked). ``ids``: entry ids in
    creation order (only when asked for). ``policy``: the enforced limits (cfg hash).
    """

    scope: str
    newest: str
    kept: bool
    ids: tuple[str, ...]
    policy: ScopePolicy


async def entry_counts(bb: Blackboard, scope_ids: Sequence[str]) -> list[int]:
    """Entries indexed by each scope (ZCARD of ``ix``: expired ones not yet swept count),
    in order; O(1) per scope, one round trip."""
    if not scope_ids:
        return []
    async with bb.client.pipeline(transaction=False) as pipe:
        for s in scope_ids:
            pipe.zcard(bb.scope(s).keys.ix)
        return [int(c) for c in await pipe.execute()]


async def scope_policies(bb: Blackboard, scope_ids: Sequence[str]) -> list[ScopePolicy]:
    """Each scope's enforced limits (its cfg hash; the defaults when it has none), in
    order; one round trip."""
    if not scope_ids:
        return []
    async with bb.client.pipeline(transaction=False) as pipe:
        for s in scope_ids:
            pipe.hgetall(bb.scope(s).keys.cfg)
        return [ScopePolicy.from_redis(h) for h in await pipe.execute()]


async def scopes_holding(bb: Blackboard, entry_id: str, scope_ids: Sequence[str]) -> list[bool]:
    """Whether each scope holds an entry ``entry_id`` (EXISTS: expired or retired entries
    not yet removed count), in order; one round trip."""
    if not isinstance(entry_id, str) or not is_entry_id(entry_id):
        raise InvalidArgument(f"entry id must match [0-9A-Za-z_-]{{1,64}}: {entry_id!r:.80}")
    if not scope_ids:
        return []
    async with bb.client.pipeline(transaction=False) as pipe:
        for s in scope_ids:
            pipe.exists(bb.scope(s).keys.entry(entry_id))
        return [bool(x) for x in await pipe.execute()]


async def feed_heads(
    bb: Blackboard,
    scope_ids: Sequence[str],
    *,
    at: Mapping[str, str] | None = None,
    with_ids: bool = False,
) -> list[FeedHead]:
    """Each scope's :class:`FeedHead`, in order, in one round trip. ``at`` (scope -> feed
    id) asks whether that event is still retained; ``with_ids`` lists every indexed entry
    id (O(entries): for a bootstrap)."""
    at = at or {}
    async with bb.client.pipeline(transaction=False) as pipe:
        for s in scope_ids:
            k = bb.scope(s).keys
            pipe.xrevrange(k.feed, count=1)
            if s in at:
                pipe.xrange(k.feed, at[s], at[s], count=1)
            if with_ids:
                pipe.zrange(k.ix, 0, -1)
            pipe.hgetall(k.cfg)
        got = iter(await pipe.execute())
    out: list[FeedHead] = []
    for s in scope_ids:
        newest = next(got)
        kept = bool(next(got)) if s in at else False
        ids = tuple(as_str(i) for i in next(got)) if with_ids else ()
        out.append(FeedHead(s, as_str(newest[0][0]) if newest else "0-0", kept, ids,
                            ScopePolicy.from_redis(next(got))))
    return out


async def entries_across(
    bb: Blackboard, wanted: Mapping[str, Sequence[str]]
) -> dict[str, list[Entry | None]]:
    """Entries of several scopes (scope -> ids), stored as they are, in one round trip:
    None for a missing one. Expired and retired entries are returned too, as an index
    follower compares them with its own clock; :meth:`Scope.get_many` filters them."""
    async with bb.client.pipeline(transaction=False) as pipe:
        for s, ids in wanted.items():
            k = bb.scope(s).keys
            for eid in ids:
                pipe.hgetall(k.entry(eid))
        hashes = iter(await pipe.execute()) if wanted else iter(())
    return {s: [decode_entry(s, h) if (h := next(hashes)) else None for _ in ids]
            for s, ids in wanted.items()}
