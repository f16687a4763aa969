"""The edge half of the registry: dataflow edges as versioned, owned records.

An edge record (``bb:edges:<id>``, a redis-om hash) carries ``version`` (1 at creation, +1
per update) and ``since`` (Redis ms at creation: the edge matches events from then on).
Three ways to store one, so setup code can never reset what an operator configured:

- :meth:`EdgeRegistry.install_edge` adds the edge if it is missing and otherwise returns
  the stored one untouched (the default hierarchy, ``acl grant``);
- :meth:`EdgeRegistry.update_edge` replaces it only if it is still at the version the
  caller read (compare-and-set under WATCH), else :class:`EdgeVersionConflict`;
- :meth:`EdgeRegistry.save_edge` is an operator's explicit set: create or replace.

Every change bumps the edges version of every partition (:func:`blackboard.bump_edges_versions`)
before it returns. Workers match bus events against the edges they loaded under a version,
and ``buffer.lua`` refuses a batch matched under an older one, so an event written after
the call returns is matched against the changed edge set: no refresh period to wait out.
Removal also drops the edge's buffers in every partition (``edge_drop.lua``), releasing
the holds their items kept on retired entries.
"""

from __future__ import annotations

import abc
import asyncio
import json
import logging
from typing import Any

from aredis_om import Field, HashModel
from redis import exceptions as rexc

from blackboard import (
    EDGE_RECORDS,
    Blackboard,
    BlackboardError,
    NotFound,
    bump_edges_versions,
    edges_versions,
    version_string,
)

from .errors import EdgeVersionConflict
from .subscriptions import MemorySubscription, TagMatch, Trigger, check_acyclic

#: How far before an edge's install its ``since`` reaches (ms): bounds the clock skew between
#: cluster nodes that still cannot make a write that follows the install miss the edge.
SINCE_SLACK_MS = 5_000

__all__ = ["EdgeFields", "EdgeRegistry", "version_string"]

log = logging.getLogger(__name__)

#: How many times a create or update races another writer of the same record before giving
#: up; each lost race means another process changed the record meanwhile.
_MAX_RACES = 20


class EdgeFields(HashModel, abc.ABC):
    """Fields of a dataflow edge's record; params, filter and trigger are JSON."""

    source: str = Field(index=True, default="")
    target: str = Field(index=True, default="")
    transformer: str = Field(index=True, default="")
    params: str = "{}"
    filter: str = "{}"
    trigger: str = "{}"
    created_at: int = 0
    #: 1 at creation, +1 per update: what update_edge compares.
    version: int = 0
    #: Redis ms at creation; kept across updates. Events before it are not matched.
    since: int = 0
    #: 1 once the creation's edges-version bump is done: an installer that finds the record
    #: with 0 (its creator may have died before bumping) bumps itself before returning.
    published: int = 0


def to_edge(r: Any) -> MemorySubscription:
    return MemorySubscription(
        source=r.source, target=r.target, transformer=r.transformer,
        params=json.loads(r.params), filter=TagMatch.from_json(json.loads(r.filter)),
        trigger=Trigger.from_json(json.loads(r.trigger)), id=r.pk,
        version=int(r.version), since=int(r.since),
    )


class EdgeRegistry:
    """Edge methods of :class:`memory.registry.Registry` (which supplies ``bb``, ``db`` and
    the bound ``Edge`` model)."""

    bb: Blackboard
    db: Any
    Edge: Any

    async def _many(self, model: Any, pks: list[str]) -> list[Any]:
        raise NotImplementedError

    async def _all(self, model: Any, pk_set: str) -> list[Any]:
        raise NotImplementedError

    # -- reading --------------------------------------------------------------------------

    async def get_edge(self, edge_id: str) -> MemorySubscription | None:
        recs = await self._many(self.Edge, [edge_id])
        return to_edge(recs[0]) if recs else None

    async def list_edges(self) -> list[MemorySubscription]:
        """Every stored edge, sorted by id. O(edges)."""
        return sorted((to_edge(r) for r in await self._all(self.Edge, EDGE_RECORDS)),
                      key=lambda e: e.id)

    async def edges_versions(self) -> dict[int, str]:
        """Every partition's edges version, in one round trip. Read it *before* listing the
        edges: a version read after could vouch for a change the listing missed."""
        return await edges_versions(self.bb)

    # -- changing -------------------------------------------------------------------------

    async def install_edge(self, edge: MemorySubscription) -> MemorySubscription:
        """Add ``edge`` if no edge has its id; otherwise return the stored one unchanged
        (its trigger, params and filter stay as configured). Safe to race: one creator wins.
        Workers match events written after this returns against it."""
        for _ in range(_MAX_RACES):
            stored = await self._record(edge.id)
            if stored is None:
                check_acyclic(await self.list_edges(), edge)
                if not await self._write(edge, expected=None):
                    continue  # another installer created it meanwhile: take theirs
                stored = await self._record(edge.id)
                if stored is None:
                    continue  # removed at once by another process
            if not int(stored.published):
                await self._publish(edge.id)
            return to_edge(stored)
        raise _busy(edge.id)

    async def update_edge(self, edge: MemorySubscription, *,
                          expected_version: int) -> MemorySubscription:
        """Replace the stored edge ``edge.id`` by ``edge`` if it is at ``expected_version``
        (compare-and-set); returns the stored edge at its new version. NotFound if there is
        no such edge, EdgeVersionConflict if another version is stored."""
        check_acyclic(await self.list_edges(), edge)
        for _ in range(_MAX_RACES):
            stored = await self._record(edge.id)
            if stored is None:
                raise NotFound(f"no dataflow edge {edge.id!r}")
            if int(stored.version) != expected_version:
                raise EdgeVersionConflict(edge.id, expected_version, int(stored.version))
            if await self._write(edge, expected=stored):
                await self._bump()
                return await self._stored(edge.id)
        raise _busy(edge.id)

    async def save_edge(self, edge: MemorySubscription) -> MemorySubscription:
        """Store ``edge`` as given: create it, or replace the stored one (an explicit set by
        an operator or a test; last writer wins). Setup code that must not reset an
        operator's settings uses :meth:`install_edge`; read-modify-write uses
        :meth:`update_edge`. Raises EdgeCycle if it would close a cycle."""
        for _ in range(_MAX_RACES):
            stored = await self.get_edge(edge.id)
            if stored is None:
                got = await self.install_edge(edge)
                if _same(got, edge):
                    return got
                continue  # someone else created another definition meanwhile: replace it
            if _same(stored, edge):
                return stored
            try:
                return await self.update_edge(edge, expected_version=stored.version)
            except EdgeVersionConflict:
                continue
        raise _busy(edge.id)

    async def remove_edge(self, edge_id: str) -> bool:
        """Remove the edge: its record, then (after bumping every partition's edges version,
        so no worker appends to it any more) its buffers and in-flight batches in every
        partition. Returns whether a record existed; the buffers are dropped either way."""
        n = await self.db.delete(self.Edge.make_primary_key(edge_id))
        await self.db.srem(EDGE_RECORDS, edge_id)
        await self._bump()
        replies = await asyncio.gather(*(
            self.bb.pending(p).drop_edge(edge_id) for p in range(self.bb.partitions)))
        buffers = sum(r[0] for r in replies)
        items = sum(r[1] for r in replies)
        if buffers:
            log.info("edge %s removed: %d buffers with %d items dropped", edge_id, buffers, items)
        return bool(n)

    async def delete_edge(self, edge_id: str) -> bool:
        """The former name of :meth:`remove_edge`."""
        return await self.remove_edge(edge_id)

    # -- plumbing -------------------------------------------------------------------------

    async def _record(self, edge_id: str) -> Any:
        recs = await self._many(self.Edge, [edge_id])
        return recs[0] if recs else None

    async def _stored(self, edge_id: str) -> MemorySubscription:
        got = await self.get_edge(edge_id)
        if got is None:
            raise NotFound(f"dataflow edge {edge_id!r} was removed meanwhile")
        return got

    async def _write(self, edge: MemorySubscription, *, expected: Any) -> bool:
        """Write ``edge``'s record in one MULTI, only if the record is still as read:
        absent (``expected`` None: a creation, then listed and published) or at
        ``expected.version``. False if another writer got there first."""
        now = self.bb.now_ms()
        fields: dict[str, Any] = {
            "source": edge.source, "target": edge.target, "transformer": edge.transformer,
            "params": json.dumps(dict(edge.params), sort_keys=True),
            "filter": json.dumps(edge.filter.to_json()),
            "trigger": json.dumps(edge.trigger.to_json()),
        }
        if expected is None:
            # ``since`` comes from Redis's clock, less a generous slack: on a cluster the
            # node stamping an event may run behind the one measured here. Matching an event
            # written a little before the install costs at most its consolidation (events
            # already consumed are never matched again); missing one written after would
            # lose it.
            slack = int(self.bb.clock.uncertainty_ms) + SINCE_SLACK_MS
            fields |= {"pk": edge.id, "created_at": now, "version": 1,
                       "since": now - slack, "published": 0}
        else:
            fields["version"] = int(expected.version) + 1
        key = self.Edge.make_primary_key(edge.id)
        try:
            async with self.db.pipeline(transaction=True) as pipe:
                await pipe.watch(key)
                cur = await pipe.hget(key, "version")
                if (expected is None) != (cur is None) or (
                        expected is not None and int(cur) != int(expected.version)):
                    await pipe.unwatch()
                    return False
                pipe.multi()
                pipe.hset(key, mapping=fields)
                await pipe.execute()
        except rexc.WatchError:
            return False
        if expected is None:
            await self.db.sadd(EDGE_RECORDS, edge.id)
            await self._publish(edge.id)
        return True

    async def _publish(self, edge_id: str) -> None:
        """Bump every partition's edges version, then mark the record published (if it
        still exists: a removal meanwhile must not leave a stub record behind)."""
        await self._bump()
        key = self.Edge.make_primary_key(edge_id)
        for _ in range(_MAX_RACES):  # an update meanwhile only delays the flag
            try:
                async with self.db.pipeline(transaction=True) as pipe:
                    await pipe.watch(key)
                    # HGET, not EXISTS: a cluster pipeline splits EXISTS by slot, unrun.
                    if await pipe.hget(key, "version") is None:
                        await pipe.unwatch()
                        return
                    pipe.multi()
                    pipe.hset(key, "published", 1)
                    await pipe.execute()
                    return
            except rexc.WatchError:
                continue
        # Left unpublished: the next installer of the edge bumps once more, nothing worse.

    async def _bump(self) -> None:
        await bump_edges_versions(self.bb)


def _same(a: MemorySubscription, b: MemorySubscription) -> bool:
    """Whether two edges have the same definition (version and since aside)."""
    return a.to_json() | {"version": 0, "since": 0} == b.to_json() | {"version": 0, "since": 0}


def _busy(edge_id: str) -> BlackboardError:
    return BlackboardError(f"edge {edge_id!r} kept changing under {_MAX_RACES} attempts to "
                           "store it; another process is rewriting it in a loop")
