"""The scope registry and the edge registry of one blackboard.

A scope's limits are stored once, in its cfg hash, because the write script reads them
there; its registry record (:class:`blackboard.ScopeRecord`, kept by ``bb.records``) holds
what the substrate does not know (kind, owner, level, creation time) and marks it
registered. A :class:`ScopeConfig` is read from both. Records written before (with the
limits copied in) are read the same way: the extra fields are ignored.
"""

from __future__ import annotations

import time
from typing import Any

from blackboard import Blackboard, ScopePolicy, ScopeRecord

from .config import LevelConfig, ScopeConfig, default_config
from .edge_registry import EdgeRegistry
from .levels import MemoryLevel
from .naming import OwnerKind

__all__ = ["Registry"]


def _to_config(r: ScopeRecord, policy: ScopePolicy) -> ScopeConfig:
    return ScopeConfig(r.scope_id, OwnerKind(r.kind), r.owner,
                       MemoryLevel(r.level) if r.level else None,
                       LevelConfig.from_policy(policy), r.created_at)


class Registry(EdgeRegistry):
    """Scope configs and dataflow edges (:mod:`memory.edge_registry`) of one blackboard,
    stored in its records (``bb.records``). Close with :meth:`aclose`."""

    def __init__(self, bb: Blackboard) -> None:
        self.bb = bb
        self.records = bb.records

    async def aclose(self) -> None:
        """Nothing to release: the registry talks over the Blackboard's client, which its
        owner closes. Kept so callers need not know."""

    # -- scopes ---------------------------------------------------------------------------

    async def register_scope(self, config: ScopeConfig) -> ScopeConfig:
        """Store (or replace) a scope's config and apply its policy to the write script."""
        old = await self.get_scope(config.scope_id)
        created = old.created_at if old else config.created_at or int(time.time() * 1000)
        rec = ScopeRecord(config.scope_id, config.kind.value, config.owner,
                          config.level.value if config.level else "", created)
        # Policy first: a registered scope is always enforced as recorded.
        scope = self.bb.scope(config.scope_id)
        await scope.set_policy(config.policy())
        await self.records.save_scope(rec)
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
        return await self._configs(await self.records.list_scopes(owner=owner))

    async def scope_ids(self) -> list[str]:
        """Ids of the registered scopes, sorted: :meth:`list_scopes` without reading their
        cfg hashes (one round trip fewer and no config built, for a caller that needs the
        names only: an operator's stats and event stream)."""
        return [r.scope_id for r in await self.records.list_scopes()]

    async def get_scopes(self, scope_ids: list[str]) -> dict[str, ScopeConfig]:
        """Configs of the given scopes that are registered; two round trips (the records,
        then their cfg hashes)."""
        return {c.scope_id: c for c in await self._configs(await self.records.scopes(scope_ids))}

    async def _configs(self, records: list[ScopeRecord]) -> list[ScopeConfig]:
        policies = await self.bb.reads.policies([r.scope_id for r in records])
        return [_to_config(r, p) for r, p in zip(records, policies, strict=True)]
