"""The edge half of the registry: dataflow edges as versioned, owned records.

An edge record (``bb:edges:<id>``, a redis-om hash) carries ``version`` (1 at creation, +1
per update) and ``since`` (Redis ms at creation: the edge matches events from then on).
Three ways to store one, so setup code can never reset what an operator configured:

- :meth:`EdgeRegistry.install_edge` adds the edge if it is missing and otherwise returns
  the stored one untouched (the default hierarchy, ``acl grant``);
- :meth:`EdgeRegistry.update_edge` replaces it only if it is still at the version the
  caller read (compare-and-set under WATCH), else :class:`EdgeVersionConflict`;
- :meth:`EdgeRegistry.save_edge` is an operator's explicit set: create or replace.

The records live in ``bb.records`` (:class:`blackboard.Records`), which does the
compare-and-set and bumps the edges version of every partition on every change before it
returns. Workers match bus events against the edges they loaded under a version,
and ``buffer.lua`` refuses a batch matched under an older one, so an event written after
the call returns is matched against the changed edge set: no refresh period to wait out.
Removal also drops the edge's buffers in every partition (``edge_drop.lua``), releasing
the holds their items kept on retired entries.
"""

from __future__ import annotations

import asyncio
import json
import logging

from blackboard import Blackboard, BlackboardError, EdgeDefinition, EdgeRecord, NotFound, Records
from blackboard.edges_version import version_string

from .errors import EdgeVersionConflict
from .subscriptions import MemorySubscription, TagMatch, Trigger, check_acyclic

#: How far before an edge's install its ``since`` reaches (ms): bounds the clock skew between
#: cluster nodes that still cannot make a write that follows the install miss the edge.
SINCE_SLACK_MS = 5_000

__all__ = ["EdgeRegistry", "version_string"]

log = logging.getLogger(__name__)

#: How many times a create or update races another writer of the same record before giving
#: up; each lost race means another process changed the record meanwhile.
_MAX_RACES = 20


def to_edge(r: EdgeRecord) -> MemorySubscription:
    return MemorySubscription(
        source=r.source, target=r.target, transformer=r.transformer,
        params=json.loads(r.params), filter=TagMatch.from_json(json.loads(r.filter)),
        trigger=Trigger.from_json(json.loads(r.trigger)), id=r.id,
        version=r.version, since=r.since,
    )


def _definition(edge: MemorySubscription) -> EdgeDefinition:
    return EdgeDefinition(
        source=edge.source, target=edge.target, transformer=edge.transformer,
        params=json.dumps(dict(edge.params), sort_keys=True),
        filter=json.dumps(edge.filter.to_json()), trigger=json.dumps(edge.trigger.to_json()),
    )


class EdgeRegistry:
    """Edge methods of :class:`memory.registry.Registry` (which supplies ``bb`` and
    ``records``)."""

    bb: Blackboard
    records: Records

    # -- reading --------------------------------------------------------------------------

    async def get_edge(self, edge_id: str) -> MemorySubscription | None:
        rec = await self.records.edge(edge_id)
        return to_edge(rec) if rec else None

    async def list_edges(self) -> list[MemorySubscription]:
        """Every stored edge, sorted by id. O(edges)."""
        return [to_edge(r) for r in await self.records.list_edges()]

    async def edges_versions(self) -> dict[int, str]:
        """Every partition's edges version, in one round trip. Read it *before* listing the
        edges: a version read after could vouch for a change the listing missed."""
        return await self.bb.edges_versions.read()

    # -- changing -------------------------------------------------------------------------

    async def install_edge(self, edge: MemorySubscription) -> MemorySubscription:
        """Add ``edge`` if no edge has its id; otherwise return the stored one unchanged
        (its trigger, params and filter stay as configured). Safe to race: one creator wins.
        Workers match events written after this returns against it."""
        for _ in range(_MAX_RACES):
            stored = await self.records.edge(edge.id)
            if stored is None:
                check_acyclic(await self.list_edges(), edge)
                if not await self._create(edge):
                    continue  # another installer created it meanwhile: take theirs
                stored = await self.records.edge(edge.id)
                if stored is None:
                    continue  # removed at once by another process
            if not stored.published:
                await self.records.publish_edge(edge.id)
            return to_edge(stored)
        raise _busy(edge.id)

    async def update_edge(self, edge: MemorySubscription, *,
                          expected_version: int) -> MemorySubscription:
        """Replace the stored edge ``edge.id`` by ``edge`` if it is at ``expected_version``
        (compare-and-set); returns the stored edge at its new version. NotFound if there is
        no such edge, EdgeVersionConflict if another version is stored."""
        check_acyclic(await self.list_edges(), edge)
        for _ in range(_MAX_RACES):
            stored = await self.records.edge(edge.id)
            if stored is None:
                raise NotFound(f"no dataflow edge {edge.id!r}")
            if stored.version != expected_version:
                raise EdgeVersionConflict(edge.id, expected_version, stored.version)
            if await self.records.replace_edge(edge.id, _definition(edge),
                                               expected_version=stored.version):
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
        existed = await self.records.delete_edge(edge_id)
        replies = await asyncio.gather(*(
            self.bb.pending(p).drop_edge(edge_id) for p in range(self.bb.partitions)))
        buffers = sum(r[0] for r in replies)
        items = sum(r[1] for r in replies)
        if buffers:
            log.info("edge %s removed: %d buffers with %d items dropped", edge_id, buffers, items)
        return existed

    async def delete_edge(self, edge_id: str) -> bool:
        """The former name of :meth:`remove_edge`."""
        return await self.remove_edge(edge_id)

    # -- plumbing -------------------------------------------------------------------------

    async def _stored(self, edge_id: str) -> MemorySubscription:
        got = await self.get_edge(edge_id)
        if got is None:
            raise NotFound(f"dataflow edge {edge_id!r} was removed meanwhile")
        return got

    async def _create(self, edge: MemorySubscription) -> bool:
        """Create ``edge``'s record unless one exists (then False); it is listed and
        published before this returns."""
        # ``since`` comes from Redis's clock, less a generous slack: on a cluster the node
        # stamping an event may run behind the one measured here. Matching an event written
        # a little before the install costs at most its consolidation (events already
        # consumed are never matched again); missing one written after would lose it.
        now = self.bb.now_ms()
        slack = int(self.bb.clock.uncertainty_ms) + SINCE_SLACK_MS
        return await self.records.create_edge(edge.id, _definition(edge), created_at=now,
                                              since=now - slack)


def _same(a: MemorySubscription, b: MemorySubscription) -> bool:
    """Whether two edges have the same definition (version and since aside)."""
    return a.to_json() | {"version": 0, "since": 0} == b.to_json() | {"version": 0, "since": 0}


def _busy(edge_id: str) -> BlackboardError:
    return BlackboardError(f"edge {edge_id!r} kept changing under {_MAX_RACES} attempts to "
                           "store it; another process is rewriting it in a loop")
