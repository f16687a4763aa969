"""The scope registry and the edge registry: typed records in Redis (redis-om HashModels).

Records live at ``bb:scopes:<scope>`` and ``bb:edges:<edge id>`` (prefixes exported by
:mod:`blackboard`). ``save`` and the reads are plain HSET/HGETALL and work on any Redis
>= 7; the models are declared ``index=True`` so a server with the Query Engine can
``find()`` them, but listing normally goes through plain sets of pks
(``bb:registry:scopes`` and ``bb:registry:edges``) so it never needs FT.SEARCH or SCAN.

A scope's limits are stored once, in its cfg hash, because the write script reads them
there; its record holds what the substrate does not know (kind, owner, level, creation
time) and marks it registered. A :class:`ScopeConfig` is read from both. Records written
before (with the limits copied in) are read the same way: the extra fields are ignored.

Why the models are bound per Blackboard: redis-om reads its connection from the class
(``Meta.database``), so one process talking to two Redis servers needs one model class per
connection. Only one class of an inheritance tree may be indexed, so the field sets below
are abstract and each :class:`Registry` makes its indexed subclasses bound to the
Blackboard's own client (one connection pool): redis-om's hash reads and FT.SEARCH replies
accept bytes, and the registry decodes the hashes it reads itself.
"""

from __future__ import annotations

import abc
import logging
import time
import types
from typing import Any

from aredis_om import Field, HashModel
from redis import exceptions as rexc

from blackboard import (
    EDGES,
    SCOPE_RECORDS,
    SCOPES,
    Blackboard,
    ScopePolicy,
    as_str,
    scope_policies,
)

from .config import LevelConfig, ScopeConfig, default_config
from .edge_registry import EdgeFields, EdgeRegistry
from .levels import MemoryLevel
from .naming import OwnerKind

__all__ = ["Registry"]

log = logging.getLogger(__name__)


class ScopeFields(HashModel, abc.ABC):
    """Fields of a scope's record (abstract: bound subclasses are the indexed models)."""

    scope_id: str = Field(index=True, default="")
    kind: str = Field(index=True, default="")
    owner: str = Field(index=True, default="")
    level: str = Field(index=True, default="")  # "" for team roots and collective
    created_at: int = 0  # ms


def _bind(base: type[HashModel], name: str, prefix: str, db: Any) -> Any:
    root, _, model = prefix.partition(":")
    meta = type("Meta", (), {"database": db, "global_key_prefix": root,
                             "model_key_prefix": model})

    def body(ns: dict[str, Any]) -> None:
        ns["Meta"] = meta
        ns["__module__"] = __name__

    return types.new_class(name, (base,), {"index": True}, body)


def _to_config(r: Any, policy: ScopePolicy) -> ScopeConfig:
    return ScopeConfig(r.scope_id, OwnerKind(r.kind), r.owner,
                       MemoryLevel(r.level) if r.level else None,
                       LevelConfig.from_policy(policy), int(r.created_at))


class Registry(EdgeRegistry):
    """Scope configs and dataflow edges (:mod:`memory.edge_registry`) of one blackboard.
    Close with :meth:`aclose`."""

    def __init__(self, bb: Blackboard) -> None:
        self.bb = bb
        self.db: Any = bb.client
        self.Scope = _bind(ScopeFields, "ScopeRecord", SCOPES, self.db)
        self.Edge = _bind(EdgeFields, "EdgeRecord", EDGES, self.db)
        self._query_engine: bool | None = None

    async def aclose(self) -> None:
        """Nothing to release: the registry talks over the Blackboard's client, which its
        owner closes. Kept so callers need not know."""

    async def has_query_engine(self) -> bool:
        """Whether the server has the Query Engine (FT.*), checked once."""
        if self._query_engine is None:
            try:
                mods = await self.db.execute_command("MODULE", "LIST")
                names = {as_str(m.get("name", m.get(b"name", ""))).lower() for m in mods
                         if isinstance(m, dict)}
                self._query_engine = bool(names & {"search", "ft", "searchlight"})
            except rexc.ResponseError:
                self._query_engine = False
        return self._query_engine

    # -- scopes ---------------------------------------------------------------------------

    async def register_scope(self, config: ScopeConfig) -> ScopeConfig:
        """Store (or replace) a scope's config and apply its policy to the write script."""
        old = await self.get_scope(config.scope_id)
        created = old.created_at if old else config.created_at or int(time.time() * 1000)
        rec = self.Scope(
            pk=config.scope_id, scope_id=config.scope_id, kind=config.kind.value,
            owner=config.owner, level=config.level.value if config.level else "",
            created_at=created,
        )
        # Policy first: a registered scope is always enforced as recorded.
        scope = self.bb.scope(config.scope_id)
        await scope.set_policy(config.policy())
        await rec.save()
        await self.db.sadd(SCOPE_RECORDS, config.scope_id)
        # Read back: the cfg hash stores times in ms, and what is stored is what counts.
        return _to_config(rec, await scope.policy())

    async def ensure_scope(self, scope_id: str, **overrides: Any) -> ScopeConfig:
        """The scope's registered config; registers the level default when it has none."""
        got = await self.get_scope(scope_id)
        if got is not None:
            return got
        return await self.register_scope(default_config(scope_id, **overrides))

    async def get_scope(self, scope_id: str) -> ScopeConfig | None:
        return (await self.get_scopes([scope_id])).get(scope_id)

    async def list_scopes(self, *, owner: str | None = None) -> list[ScopeConfig]:
        """Registered scopes (optionally of one owner), sorted by id. O(scopes)."""
        records = None
        if owner is not None and await self._index_ready(self.Scope):
            try:
                records = await self.Scope.find(self.Scope.owner == owner).all()
            except rexc.ResponseError as exc:  # index dropped or query refused: fall back
                log.warning("registry find() failed, listing the pk set instead: %s", exc)
        if records is None:
            records = await self._all(self.Scope, SCOPE_RECORDS)
        out = await self._configs(records)
        if owner is not None:
            out = [c for c in out if c.owner == owner]
        return sorted(out, key=lambda c: c.scope_id)

    async def get_scopes(self, scope_ids: list[str]) -> dict[str, ScopeConfig]:
        """Configs of the given scopes that are registered; two round trips (the records,
        then their cfg hashes)."""
        return {c.scope_id: c for c in await self._configs(await self._many(self.Scope, scope_ids))}

    async def _configs(self, records: list[Any]) -> list[ScopeConfig]:
        policies = await scope_policies(self.bb, [r.scope_id for r in records])
        return [_to_config(r, p) for r, p in zip(records, policies, strict=True)]

    # -- plumbing -------------------------------------------------------------------------

    async def _index_ready(self, model: Any) -> bool:
        """Create the model's FT index when the server has the Query Engine; False without."""
        if not await self.has_query_engine():
            return False
        try:
            await self.db.execute_command("FT.INFO", model._meta.index_name)
        except rexc.ResponseError:
            try:
                await self.db.execute_command(
                    "FT.CREATE", model._meta.index_name, *model.redisearch_schema().split()
                )
            except rexc.ResponseError as exc:
                log.warning("cannot create registry index: %s", exc)
                return False
        return True

    async def _all(self, model: Any, pk_set: str) -> list[Any]:
        try:
            pks = sorted(as_str(m) for m in await self.db.smembers(pk_set))
        except rexc.NoPermissionError:
            return []  # a confined agent user may not list the registry
        return await self._many(model, pks)

    async def _many(self, model: Any, pks: list[str]) -> list[Any]:
        """Records by pk in one pipeline (``model.get`` would cost a round trip each)."""
        if not pks:
            return []
        async with self.db.pipeline(transaction=False) as pipe:
            for pk in pks:
                pipe.hgetall(model.make_primary_key(pk))
            docs = await pipe.execute(raise_on_error=False)
        for d in docs:
            # A confined agent user may read only its own and its teams' records: the
            # others are simply not visible to it.
            if isinstance(d, Exception) and not isinstance(d, rexc.NoPermissionError):
                raise d
        return [model.model_validate({as_str(k): as_str(v) for k, v in d.items()} | {"pk": pk})
                for pk, d in zip(pks, docs, strict=True) if d and not isinstance(d, Exception)]
