"""The registry's records: scope identities and dataflow edges (redis-om HashModels).

Records live at ``bb:scopes:<scope>`` and ``bb:edges:<edge id>`` (:mod:`blackboard.keys`).
Saving and reading are plain HSET/HGETALL and work on any Redis >= 7; the models are
declared ``index=True`` so a server with the Query Engine can ``find()`` them, but listing
normally goes through plain sets of pks (``bb:registry:scopes`` and ``bb:registry:edges``)
so it never needs FT.SEARCH or SCAN.

Why the models are bound per Blackboard: redis-om reads its connection from the class
(``Meta.database``), so one process talking to two Redis servers needs one model class per
connection. Only one class of an inheritance tree may be indexed, so the field sets below
are abstract and each :class:`Records` makes its indexed subclasses bound to the
Blackboard's own client (one connection pool): redis-om's hash reads and FT.SEARCH replies
accept bytes, and :class:`Records` decodes the hashes it reads itself.

What the records mean (a scope's level and limits, an edge's matching rules, when an edge
may be created or replaced) is :mod:`memory.registry`'s; this module stores them, and
keeps an edge change and the edges-version bump every worker waits for together.
"""

from __future__ import annotations

import abc
import logging
import types
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from aredis_om import Field, HashModel

from . import keys as K
from .codec import as_str
from .errors import AccessDenied, ConcurrentChange, ServerError
from .redis_errors import untranslated

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["EdgeDefinition", "EdgeRecord", "Records", "ScopeRecord"]

log = logging.getLogger(__name__)

#: How many times marking an edge published retries when an update races it.
_PUBLISH_TRIES = 20


@dataclass(frozen=True)
class ScopeRecord:
    """A scope's identity in the registry (its limits live in its cfg hash)."""

    scope_id: str
    kind: str
    owner: str
    level: str  # "" for team roots and collective
    created_at: int  # ms


@dataclass(frozen=True)
class EdgeDefinition:
    """What the writer of an edge sets; ``params``, ``filter`` and ``trigger`` are JSON."""

    source: str
    target: str
    transformer: str
    params: str
    filter: str
    trigger: str


@dataclass(frozen=True, kw_only=True)
class EdgeRecord(EdgeDefinition):
    """A stored edge: its definition and what the store keeps about it."""

    id: str
    created_at: int
    #: 1 at creation, +1 per replacement: what :meth:`Records.replace_edge` compares.
    version: int
    #: Redis ms from which the edge matches events; kept across replacements.
    since: int
    #: True once the creation's edges-version bump is done: an installer that finds it
    #: False (its creator may have died before bumping) publishes it before returning.
    published: bool


class _ScopeFields(HashModel, abc.ABC):
    scope_id: str = Field(index=True, default="")
    kind: str = Field(index=True, default="")
    owner: str = Field(index=True, default="")
    level: str = Field(index=True, default="")
    created_at: int = 0


class _EdgeFields(HashModel, abc.ABC):
    source: str = Field(index=True, default="")
    target: str = Field(index=True, default="")
    transformer: str = Field(index=True, default="")
    params: str = "{}"
    filter: str = "{}"
    trigger: str = "{}"
    created_at: int = 0
    version: int = 0
    since: int = 0
    published: int = 0


def _bind(base: type[HashModel], name: str, prefix: str, db: Any) -> Any:
    root, _, model = prefix.partition(":")
    meta = type("Meta", (), {"database": db, "global_key_prefix": root,
                             "model_key_prefix": model})

    def body(ns: dict[str, Any]) -> None:
        ns["Meta"] = meta
        ns["__module__"] = __name__

    return types.new_class(name, (base,), {"index": True}, body)


def _scope(m: Any) -> ScopeRecord:
    return ScopeRecord(m.scope_id, m.kind, m.owner, m.level, int(m.created_at))


def _edge(m: Any) -> EdgeRecord:
    return EdgeRecord(
        source=m.source, target=m.target, transformer=m.transformer, params=m.params,
        filter=m.filter, trigger=m.trigger, id=m.pk, created_at=int(m.created_at),
        version=int(m.version), since=int(m.since), published=bool(int(m.published)),
    )


class Records:
    """The scope and edge records of one blackboard, on its client (``bb.records``)."""

    def __init__(self, bb: Blackboard) -> None:
        self.bb = bb
        #: The redis-om models bound to the Blackboard's client.
        self.Scope: Any = _bind(_ScopeFields, "ScopeRecord", K.SCOPES, bb.client)
        self.Edge: Any = _bind(_EdgeFields, "EdgeRecord", K.EDGES, bb.client)
        self._query_engine: bool | None = None

    async def has_query_engine(self) -> bool:
        """Whether the server has the Query Engine (FT.*), checked once. Never on a
        cluster: each master would index only its own slots, so ``find()`` would miss
        records (and MODULE LIST names no key to route by)."""
        if self._query_engine is None and self.bb.cluster:
            self._query_engine = False
        if self._query_engine is None:
            try:
                mods = await self.bb.client.execute_command("MODULE", "LIST")
                names = {as_str(m.get("name", m.get(b"name", ""))).lower() for m in mods
                         if isinstance(m, dict)}
                self._query_engine = bool(names & {"search", "ft", "searchlight"})
            except (ServerError, AccessDenied):
                self._query_engine = False
        return self._query_engine

    # -- scopes ---------------------------------------------------------------------------

    async def save_scope(self, rec: ScopeRecord) -> None:
        """Store (or replace) a scope's record and list it."""
        async with untranslated():
            await self.Scope(pk=rec.scope_id, **asdict(rec)).save()
        await self.bb.client.sadd(K.SCOPE_RECORDS, rec.scope_id)

    async def scopes(self, scope_ids: Sequence[str]) -> list[ScopeRecord]:
        """The records of those of ``scope_ids`` that are registered (and readable), in
        their order; one round trip."""
        return [_scope(m) for m in await self._many(self.Scope, scope_ids)]

    async def list_scopes(self, *, owner: str | None = None) -> list[ScopeRecord]:
        """Every registered scope's record (optionally of one owner), sorted by id."""
        found = None
        if owner is not None and await self._index_ready(self.Scope):
            try:
                async with untranslated():
                    found = await self.Scope.find(self.Scope.owner == owner).all()
            except (ServerError, AccessDenied) as exc:  # index dropped or query refused
                log.warning("registry find() failed, listing the pk set instead: %s", exc)
        if found is None:
            found = await self._all(self.Scope, K.SCOPE_RECORDS)
        out = [_scope(m) for m in found]
        if owner is not None:
            out = [r for r in out if r.owner == owner]
        return sorted(out, key=lambda r: r.scope_id)

    # -- edges ----------------------------------------------------------------------------

    async def edge(self, edge_id: str) -> EdgeRecord | None:
        got = await self._many(self.Edge, [edge_id])
        return _edge(got[0]) if got else None

    async def list_edges(self) -> list[EdgeRecord]:
        """Every stored edge, sorted by id. O(edges)."""
        return [_edge(m) for m in await self._all(self.Edge, K.EDGE_RECORDS)]

    async def create_edge(self, edge_id: str, definition: EdgeDefinition, *,
                          created_at: int, since: int) -> bool:
        """Create the edge at version 1 if no record has its id (compare-and-set under
        WATCH), list it and publish it; False if it exists (another writer got there
        first)."""
        fields = asdict(definition) | {"pk": edge_id, "created_at": created_at, "version": 1,
                                       "since": since, "published": 0}
        if not await self._write(edge_id, fields, expected_version=None):
            return False
        await self.bb.client.sadd(K.EDGE_RECORDS, edge_id)
        await self.publish_edge(edge_id)
        return True

    async def replace_edge(self, edge_id: str, definition: EdgeDefinition, *,
                           expected_version: int) -> bool:
        """Replace the edge's definition if it is stored at ``expected_version``
        (compare-and-set under WATCH; the version goes up by one, ``since`` stays), then
        bump every partition's edges version. False if it is absent or at another version."""
        fields = asdict(definition) | {"version": expected_version + 1}
        if not await self._write(edge_id, fields, expected_version=expected_version):
            return False
        await self.bb.edges_versions.bump()
        return True

    async def publish_edge(self, edge_id: str) -> None:
        """Bump every partition's edges version, then mark the record published (if it
        still exists: a removal meanwhile must not leave a stub record behind)."""
        await self.bb.edges_versions.bump()
        key = self.Edge.make_primary_key(edge_id)
        for _ in range(_PUBLISH_TRIES):  # an update meanwhile only delays the flag
            try:
                async with self.bb.client.pipeline(transaction=True) as pipe:
                    await pipe.watch(key)
                    # HGET, not EXISTS: a cluster pipeline splits EXISTS by slot, unrun.
                    if await pipe.hget(key, "version") is None:
                        await pipe.unwatch()
                        return
                    pipe.multi()
                    pipe.hset(key, "published", 1)
                    await pipe.execute()
                    return
            except ConcurrentChange:
                continue
        # Left unpublished: the next installer of the edge bumps once more, nothing worse.

    async def delete_edge(self, edge_id: str) -> bool:
        """Delete the edge's record and unlist it, then bump every partition's edges
        version; whether a record existed."""
        n = await self.bb.client.delete(self.Edge.make_primary_key(edge_id))
        await self.bb.client.srem(K.EDGE_RECORDS, edge_id)
        await self.bb.edges_versions.bump()
        return bool(n)

    # -- plumbing -------------------------------------------------------------------------

    async def _write(self, edge_id: str, fields: dict[str, Any], *,
                     expected_version: int | None) -> bool:
        """HSET ``fields`` in one MULTI, only if the record is still as read: absent
        (``expected_version`` None) or at ``expected_version``."""
        key = self.Edge.make_primary_key(edge_id)
        try:
            async with self.bb.client.pipeline(transaction=True) as pipe:
                await pipe.watch(key)
                cur = await pipe.hget(key, "version")
                if (expected_version is None) != (cur is None) or (
                        expected_version is not None and int(cur) != expected_version):
                    await pipe.unwatch()
                    return False
                pipe.multi()
                pipe.hset(key, mapping=fields)
                await pipe.execute()
        except ConcurrentChange:
            return False
        return True

    async def _index_ready(self, model: Any) -> bool:
        """Create the model's FT index when the server has the Query Engine; False without."""
        if not await self.has_query_engine():
            return False
        try:
            await self.bb.client.execute_command("FT.INFO", model._meta.index_name)
        except (ServerError, AccessDenied):
            try:
                await self.bb.client.execute_command(
                    "FT.CREATE", model._meta.index_name, *model.redisearch_schema().split()
                )
            except (ServerError, AccessDenied) as exc:
                log.warning("cannot create registry index: %s", exc)
                return False
        return True

    async def _all(self, model: Any, pk_set: str) -> list[Any]:
        try:
            pks = sorted(as_str(m) for m in await self.bb.client.smembers(pk_set))
        except AccessDenied:
            return []  # a confined agent user may not list the registry
        return await self._many(model, pks)

    async def _many(self, model: Any, pks: Sequence[str]) -> list[Any]:
        """Records by pk in one pipeline (``model.get`` would cost a round trip each)."""
        if not pks:
            return []
        async with self.bb.client.pipeline(transaction=False) as pipe:
            for pk in pks:
                pipe.hgetall(model.make_primary_key(pk))
            docs = await pipe.execute(raise_on_error=False)
        for d in docs:
            # A confined agent user may read only its own and its teams' records: the
            # others are simply not visible to it.
            if isinstance(d, Exception) and not isinstance(d, AccessDenied):
                raise d
        return [model.model_validate({as_str(k): as_str(v) for k, v in d.items()} | {"pk": pk})
                for pk, d in zip(pks, docs, strict=True) if d and not isinstance(d, Exception)]
