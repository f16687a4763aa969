"""The read side of the substrate: every read that spans scopes, and the listing of one.

A :class:`Scope` method reads one scope by id; an agent's memory map, its ``locate``, an
index follower, observers and the dataflow ask the same questions of many scopes at once.
:class:`Reads` (``bb.reads``) answers each in one round trip (a pipeline, which a cluster
client splits by slot, or one script call) instead of a round trip per scope:

- scope state: :meth:`~Reads.counts`, :meth:`~Reads.policies`, :meth:`~Reads.holding`,
  :meth:`~Reads.stats` (maths in :mod:`blackboard.scope_stats`);
- entries: :meth:`~Reads.entries` (of several scopes, stored as they are),
  :meth:`~Reads.fetch` (the dataflow's batch read of one partition), :meth:`~Reads.listing`
  (one scope by tags and time: :meth:`Scope.entries`; its index walks are in
  :mod:`blackboard.listing`, which keeps this module under ~400 lines);
- feeds: :meth:`~Reads.newest_ids`, :meth:`~Reads.newest_event_ids`, :meth:`~Reads.heads`,
  :meth:`~Reads.ranges`, and the blocking :meth:`~Reads.events`, from
  :class:`~blackboard.feed_reads.FeedReads` (the feed half, in its own module).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .entry import (
    ENTRY_FIELDS,
    Entry,
    ScopePolicy,
    decode_entry,
    decode_entry_values,
)
from .errors import InvalidArgument
from .feed_reads import FeedHead, FeedReads, heads_reply
from .ids import is_entry_id
from .keys import ScopeKeys, partition_of
from .listing import fetch_filtered, tagged_ids, walk_time_index
from .pool_stats import read_pools, read_samples
from .scope_stats import ScopeStats, counted_from_samples, scope_stats_of, strength_ranges
from .scripts import run_script
from .validation import validate_scope, validate_tags

if TYPE_CHECKING:
    from .board import Blackboard
    from .scope import Scope

# FeedHead and heads_reply are feed_reads', re-exported for the callers that import them here
__all__ = ["EntryRef", "FeedHead", "Reads", "heads_reply"]

log = logging.getLogger(__name__)

@dataclass(frozen=True, slots=True)
class EntryRef:
    """An entry named by its scope and id."""

    scope: str
    entry_id: str


def _subset(fields: Sequence[str]) -> tuple[str, ...]:
    """``fields`` as :meth:`Reads.fetch` reads them: ``id`` first (a missing entry reads
    no id), each an :data:`ENTRY_FIELDS` name."""
    bad = [f for f in fields if f not in ENTRY_FIELDS]
    if bad:
        raise InvalidArgument(f"fields: {bad[0]!r:.40} is not an entry field; send names of "
                              "blackboard.entry.ENTRY_FIELDS")
    return ("id", *dict.fromkeys(f for f in fields if f != "id"))


def _entry_id_error(entry_id: object) -> InvalidArgument:
    return InvalidArgument(f"entry id must match [0-9A-Za-z_-]{{1,64}}: {entry_id!r:.80}")


class Reads(FeedReads):
    """The blackboard's reads over many scopes (``bb.reads``); nothing is sent until asked."""

    def __init__(self, bb: Blackboard) -> None:
        self.bb = bb

    # -- scope state ----------------------------------------------------------------------

    async def counts(self, scope_ids: Sequence[str]) -> list[int]:
        """Entries indexed by each scope (ZCARD of ``ix``: expired ones not yet swept
        count), in order; O(1) per scope, one round trip."""
        if not scope_ids:
            return []
        async with self.bb.client.pipeline(transaction=False) as pipe:
            for s in scope_ids:
                pipe.zcard(self.bb.scope(s).keys.ix)
            return [int(c) for c in await pipe.execute()]

    async def policies(self, scope_ids: Sequence[str]) -> list[ScopePolicy]:
        """Each scope's enforced limits (its cfg hash; the defaults when it has none), in
        order; one round trip."""
        if not scope_ids:
            return []
        async with self.bb.client.pipeline(transaction=False) as pipe:
            for s in scope_ids:
                pipe.hgetall(self.bb.scope(s).keys.cfg)
            return [ScopePolicy.from_redis(h) for h in await pipe.execute()]

    async def holding(self, entry_id: str, scope_ids: Sequence[str]) -> list[bool]:
        """Whether each scope holds an entry ``entry_id`` (EXISTS: expired or retired
        entries not yet removed count), in order; one round trip."""
        if not isinstance(entry_id, str) or not is_entry_id(entry_id):
            raise _entry_id_error(entry_id)
        if not scope_ids:
            return []
        async with self.bb.client.pipeline(transaction=False) as pipe:
            for s in scope_ids:
                pipe.exists(self.bb.scope(s).keys.entry(entry_id))
            return [bool(x) for x in await pipe.execute()]

    async def stats(self, scope_ids: Sequence[str]) -> list[ScopeStats]:
        """Stats of each scope, in order; O(scopes + tags) Redis work in at most four round
        trips: the scopes' state; the pool samples (:mod:`blackboard.pool_stats`, at most
        ``POOL_SAMPLE`` entries each); the strength histogram's ZCOUNTs of the scopes the
        sample did not read whole (the others are counted from it); the authors of the
        sampled entries of team and collective scopes."""
        if not scope_ids:
            return []
        now = self.bb.now_ms()
        keys = [self.bb.scope(s).keys for s in scope_ids]
        async with self.bb.client.pipeline(transaction=False) as pipe:
            for k in keys:
                pipe.zcard(k.ix)
                pipe.zcount(k.exp, "-inf", now)
                pipe.hgetall(k.tags)
                pipe.zrange(k.ix, 0, 0, withscores=True)
                pipe.zrange(k.ix, -1, -1, withscores=True)
                pipe.hgetall(k.cfg)
            first = await pipe.execute()
        rows = [first[i * 6 : i * 6 + 6] for i in range(len(keys))]
        policies = [ScopePolicy.from_redis(row[5]) for row in rows]
        ranges = [strength_ranges(p, now) for p in policies]
        sampled = await read_samples(self.bb.client, keys)
        counted = counted_from_samples(ranges, sampled)
        if asked := [i for i in range(len(keys)) if i not in counted]:
            async with self.bb.client.pipeline(transaction=False) as pipe:
                for i in asked:
                    for lo, hi in ranges[i]:
                        pipe.zcount(keys[i].evict, lo, hi)
                got = iter(await pipe.execute())
            counted |= {i: [int(next(got)) for _ in ranges[i]] for i in asked}
        out = [scope_stats_of(s, row, policy, counted[i])
               for i, (s, row, policy) in enumerate(zip(scope_ids, rows, policies, strict=True))]
        pools = await read_pools(self.bb.client, keys, [st.count for st in out], policies, now,
                                 sampled)
        return [replace(st, pool=p) for st, p in zip(out, pools, strict=True)]

    # -- entries --------------------------------------------------------------------------

    async def entries(self, wanted: Mapping[str, Sequence[str]]) -> dict[str, list[Entry | None]]:
        """Entries of several scopes (scope -> ids), stored as they are, in one round trip:
        None for a missing one. Expired and retired entries are returned too, as an index
        follower compares them with its own clock; :meth:`Scope.get_many` filters them."""
        async with self.bb.client.pipeline(transaction=False) as pipe:
            for s, ids in wanted.items():
                k = self.bb.scope(s).keys
                for eid in ids:
                    pipe.hgetall(k.entry(eid))
            hashes = iter(await pipe.execute()) if wanted else iter(())
        return {s: [decode_entry(s, h) if (h := next(hashes)) else None for _ in ids]
                for s, ids in wanted.items()}

    async def fetch(
        self,
        partition: int,
        refs: Sequence[EntryRef],
        *,
        skip_invalid: bool = False,
        retained: bool = False,
        fields: Sequence[str] | None = None,
    ) -> list[Entry | None]:
        """The live entries ``refs`` name, in order; None for a missing or expired one.

        The dataflow's batch read: a pending buffer names entries of several scopes of one
        partition, and one script call (``get_entries.lua``, HMGET of the fields an
        :class:`Entry` needs) replaces a pipelined HGETALL per entry, whose client-side
        packing and parsing dominated a worker's read (measured: 6 against 18 us per entry,
        client and server).

        ``retained``: the dataflow's view — also entries that expired or were evicted
        (retired) and are kept until every edge has consolidated them.

        ``fields``: read only these of :data:`ENTRY_FIELDS` (and ``id``, and
        ``expires_at`` unless ``retained``); the others read as absent (their defaults),
        for a reader that uses no more (the timeline role reads 7 of 24).

        Every ref must name a valid scope of ``partition`` and a valid entry id (their keys
        share the partition's slot, which a single script call needs on a cluster);
        anything else raises :class:`InvalidArgument` before Redis is touched, or with
        ``skip_invalid`` (refs that came from untrusted hints) is logged and read as None.
        """
        keys = self._entry_keys(partition, refs, skip_invalid)
        valid = [k for k in keys if k is not None]
        if not valid:
            return [None] * len(keys)
        # the expiry is read whenever it decides what is returned
        names = ENTRY_FIELDS if fields is None else _subset(
            fields if retained else (*fields, "expires_at"))
        at = None if fields is None else [ENTRY_FIELDS.index(f) for f in names]
        rows = iter(await run_script(self.bb.client, "get_entries", valid,
                                     [*names, "retired"]))
        now = self.bb.now_ms()
        out: list[Entry | None] = []
        for ref, key in zip(refs, keys, strict=True):
            row = next(rows) if key is not None else None
            if not row or row[0] is None:  # invalid ref, or no id: the entry does not exist
                out.append(None)
                continue
            values = row[:-1]
            if at is not None:
                values = [None] * len(ENTRY_FIELDS)
                for i, v in zip(at, row, strict=False):
                    values[i] = v
            e = decode_entry_values(ref.scope, values)
            out.append(e if retained or (row[-1] is None and not e.expired(now)) else None)
        return out

    def _entry_keys(
        self, partition: int, refs: Sequence[EntryRef], skip_invalid: bool
    ) -> list[str | None]:
        """Each ref's entry key; None for an invalid ref when ``skip_invalid`` (logged)."""
        keys: list[str | None] = []
        prefixes: dict[str, str | InvalidArgument] = {}  # a batch names few scopes
        for ref in refs:
            prefix = prefixes.get(ref.scope)
            if prefix is None:
                prefix = prefixes[ref.scope] = self._key_prefix(partition, ref.scope)
            err = prefix if isinstance(prefix, InvalidArgument) else None
            if err is None and not is_entry_id(ref.entry_id):
                err = _entry_id_error(ref.entry_id)
            if err is None:
                keys.append(f"{prefix}{ref.entry_id}")
            elif skip_invalid:
                log.warning("skipping a reference to an invalid scope/id (%s): %r", err, ref)
                keys.append(None)
            else:
                raise err
        return keys

    def _key_prefix(self, partition: int, scope: str) -> str | InvalidArgument:
        """The entry-key prefix of ``scope``, or the error unless it is a scope of
        ``partition``."""
        try:
            validate_scope(scope)
        except InvalidArgument as exc:
            return exc
        if partition_of(scope, self.bb.partitions) != partition:
            return InvalidArgument(f"scope {scope!r} is not in partition {partition}")
        return ScopeKeys(scope, partition).entry("")

    async def listing(
        self,
        scope: Scope,
        *,
        all_of: Iterable[str] | None = None,
        any_of: Iterable[str] | None = None,
        none_of: Iterable[str] | None = None,
        start_ms: int | None = None,
        end_ms: int | None = None,
        limit: int | None = 100,
        newest_first: bool = True,
    ) -> list[Entry]:
        """Live entries of ``scope`` matching the tag filter and time range (created_at,
        ms, inclusive), from its indexes, never a scan: :meth:`Scope.entries`. Tag sets
        narrow the candidates on the server (SINTER/SUNION), the time order comes from the
        ``ix`` zset, ``none_of`` is applied to the fetched entries; ``limit=None`` returns
        every match."""
        a, o, n = validate_tags(all_of), validate_tags(any_of), set(validate_tags(none_of))
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 0):
            raise InvalidArgument(f"limit must be a non-negative int or None, got {limit!r}")
        if set(a) & n:
            return []
        lo = "-inf" if start_ms is None else int(start_ms)
        hi = "+inf" if end_ms is None else int(end_ms)
        if a or o:
            ids = await tagged_ids(scope, a, o, lo, hi, newest_first)
            return await fetch_filtered(scope, ids, n, limit)
        return await walk_time_index(scope, n, lo, hi, limit, newest_first)
