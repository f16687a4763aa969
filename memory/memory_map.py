"""The memory map: the scopes an agent can see, their configs and sizes, and the dataflow
edges between them with the sizes of their pending buffers."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from blackboard import Blackboard
from blackboard.pending import buffer_lengths

from .access import AccessPolicy
from .config import ScopeConfig
from .naming import parse_scope
from .registry import Registry
from .subscriptions import MemorySubscription

__all__ = ["EdgeView", "MemoryMap", "ScopeView", "build_memory_map"]


@dataclass(frozen=True, slots=True)
class ScopeView:
    """One visible scope: its registered config (None if unregistered) and live count."""

    scope: str
    kind: str
    owner: str
    level: str | None
    config: ScopeConfig | None
    count: int
    writable: bool

    def to_json(self) -> dict[str, Any]:
        return {"scope": self.scope, "kind": self.kind, "owner": self.owner,
                "level": self.level, "count": self.count, "writable": self.writable,
                "config": self.config.to_json() if self.config else None}


@dataclass(frozen=True, slots=True)
class EdgeView:
    """A dataflow edge bound to a concrete source scope; ``pending`` is the length of its
    ingestion buffer (:class:`blackboard.PendingBuffer`: events not yet transformed)."""

    edge: str
    source: str
    target: str
    transformer: str
    pattern: str
    pending: int

    def to_json(self) -> dict[str, Any]:
        return {"edge": self.edge, "source": self.source, "target": self.target,
                "transformer": self.transformer, "pattern": self.pattern,
                "pending": self.pending}


@dataclass(frozen=True, slots=True)
class MemoryMap:
    agent: str
    teams: tuple[str, ...]
    scopes: tuple[ScopeView, ...]
    edges: tuple[EdgeView, ...]

    def scope(self, scope_id: str) -> ScopeView | None:
        return next((s for s in self.scopes if s.scope == scope_id), None)

    def to_dict(self) -> dict[str, Any]:
        return {"agent": self.agent, "teams": list(self.teams),
                "scopes": [s.to_json() for s in self.scopes],
                "edges": [e.to_json() for e in self.edges]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True)


async def build_memory_map(
    bb: Blackboard, registry: Registry, access: AccessPolicy, candidates: Sequence[str], *,
    edges: Sequence[MemorySubscription] | None = None, buffers: Blackboard | None = None,
    configs: Mapping[str, ScopeConfig] | None = None,
) -> MemoryMap:
    """Map of the ``candidates`` (readable scopes by name) that are registered or hold
    entries, with each edge bound to each of them it consumes. Cost: O(scopes + edges)
    commands in five round trips (the configs' two, the counts, the edges' two, the
    buffers), independent of entries.

    ``edges`` (default: the registry's, as ``bb``'s user reads them) and ``buffers`` (the
    connection the pending buffers are read on; default ``bb``): an agent's Redis user
    reads neither the edge records nor the buffers, so a trusted reader (the gateway's
    service connection) passes them in; the binding to the agent's readable scopes stays
    here, so it shows only edges out of scopes the agent may read.

    ``configs``: the candidates' registered configs when the caller has just read them
    (an operator's candidates are the registered scopes, listed with their configs), so
    they are not read twice; default: read here."""
    if configs is None:
        configs = await registry.get_scopes(list(candidates))
    counts = await bb.reads.counts(candidates)
    views = []
    for s, n in zip(candidates, counts, strict=True):
        if s not in configs and not n:
            continue
        name = parse_scope(s)
        views.append(ScopeView(s, name.kind.value, name.owner,
                               name.level.value if name.level else None, configs.get(s), n,
                               access.can_write(s)))
    if edges is None:
        edges = await registry.list_edges()
    bound = [(e, v.scope, t) for e in edges for v in views
             if (t := e.match(v.scope)) is not None]
    pend = await _pending_lengths(buffers or bb, [(e.id, src, tgt) for e, src, tgt in bound])
    ev = tuple(EdgeView(e.id, src, tgt, e.transformer, e.source, p)
               for (e, src, tgt), p in zip(bound, pend, strict=True))
    return MemoryMap(access.agent_id, tuple(sorted(access.teams)), tuple(views), ev)


async def _pending_lengths(bb: Blackboard, bound: Sequence[tuple[str, str, str]]) -> list[int]:
    """Buffer length of each (edge, source scope, target): a buffer lives in its source's
    partition; one round trip for them all."""
    return await buffer_lengths(bb, [(bb.scope(src).partition, edge, tgt)
                                     for edge, src, tgt in bound])
