"""The default memory hierarchy of an agent: its level scopes and the edges between them.

The edges come from the transformer catalog (:mod:`memory.catalog`; consolidation defines
them, as they name its transformers); this module registers the scopes and installs them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from blackboard import Blackboard

from .catalog import catalog
from .config import ScopeConfig, default_config
from .levels import MemoryLevel
from .naming import COLLECTIVE, agent_scope, team_scope
from .registry import Registry
from .subscriptions import MemorySubscription

__all__ = ["Hierarchy", "default_edges", "install_default_hierarchy"]


@dataclass(frozen=True, slots=True)
class Hierarchy:
    scopes: tuple[ScopeConfig, ...]
    edges: tuple[MemorySubscription, ...]


def default_edges(agent_id: str, teams: Iterable[str] = ()) -> list[MemorySubscription]:
    """The default dataflow edges of ``agent_id`` and its ``teams``, as the transformer
    catalog defines them (:func:`consolidation.catalog.default_edges`: the edges name
    transformers, which are consolidation's)."""
    return catalog().default_edges(agent_id, teams)


async def install_default_hierarchy(
    bb: Blackboard,
    agent_id: str,
    teams: Iterable[str] = (),
    *,
    overrides: Mapping[MemoryLevel, Mapping[str, Any]] | None = None,
    registry: Registry | None = None,
) -> Hierarchy:
    """Register the agent's level scopes and its teams' root scopes, and install the default
    edges. Idempotent: existing configs are kept unless ``overrides`` names their level
    (then that level's config is replaced by the default with the overrides applied), and
    an edge that exists is kept as stored (shared pattern edges are installed once; an
    operator's trigger is never reset). Returns the stored edges. A write made after this
    returns is matched against them by every worker, with no wait."""
    teams = list(teams)
    reg = registry or Registry(bb)
    try:
        scopes = []
        for lvl in MemoryLevel:
            sid = agent_scope(agent_id, lvl)
            if overrides and lvl in overrides:
                scopes.append(await reg.register_scope(default_config(sid, **overrides[lvl])))
            else:
                scopes.append(await reg.ensure_scope(sid))
        for t in teams:
            scopes.append(await reg.ensure_scope(team_scope(t)))
            # where the team's reconciled beliefs go (the agent -> team belief edges)
            scopes.append(await reg.ensure_scope(team_scope(t, MemoryLevel.SEMANTIC)))
        # where every agent's agreed beliefs and pooled procedures go (the collective edges)
        scopes.append(await reg.ensure_scope(COLLECTIVE))
        edges = [await reg.install_edge(e) for e in default_edges(agent_id, teams)]
        return Hierarchy(tuple(scopes), tuple(edges))
    finally:
        if registry is None:
            await reg.aclose()
