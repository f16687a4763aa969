"""The default memory hierarchy of an agent: its level scopes and the edges between them.

Per-agent edges are installed as patterns (``agent:*:working -> agent:{1}:stm``) shared by
every agent, so workers match each event against a handful of edges, not one set per
agent; only the agent -> team edges are concrete (they depend on membership).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from blackboard import Blackboard

from .config import ScopeConfig, default_config
from .levels import MemoryLevel
from .naming import agent_scope, team_scope
from .registry import Registry
from .subscriptions import MemorySubscription, TagMatch, Trigger

__all__ = ["Hierarchy", "default_edges", "install_default_hierarchy"]


@dataclass(frozen=True, slots=True)
class Hierarchy:
    scopes: tuple[ScopeConfig, ...]
    edges: tuple[MemorySubscription, ...]


def default_edges(agent_id: str, teams: Iterable[str] = ()) -> list[MemorySubscription]:
    """The default dataflow: sensory -> working -> stm (steps kept, and summaries) ->
    {episodic, semantic, procedural} from the steps, and the agent's stm summaries -> each
    team's root scope. Triggers: counts with a time bound."""
    every_hour = Trigger.any_of(Trigger.count(50), Trigger.timer(3600))
    steps = TagMatch.of(none_of={"summary"})
    edges = [
        MemorySubscription("agent:*:sensory", "agent:{1}:working", "identity",
                           trigger=Trigger.count(1)),
        # Working memory is capped and short-lived: its steps are kept in stm as they are
        # (identity) and condensed (summarize); the long-term transformers read the steps.
        MemorySubscription("agent:*:working", "agent:{1}:stm", "identity",
                           trigger=Trigger.any_of(Trigger.count(20), Trigger.age(60))),
        MemorySubscription("agent:*:working", "agent:{1}:stm", "summarize",
                           params={"budget": 200},
                           trigger=Trigger.any_of(Trigger.count(20), Trigger.age(600))),
        MemorySubscription("agent:*:stm", "agent:{1}:ltm:episodic", "episodic",
                           filter=steps, trigger=every_hour),
        MemorySubscription("agent:*:stm", "agent:{1}:ltm:semantic", "semantic",
                           filter=steps, trigger=every_hour),
        MemorySubscription("agent:*:stm", "agent:{1}:ltm:procedural", "procedural",
                           filter=steps, trigger=every_hour),
    ]
    for t in sorted(set(teams)):
        edges.append(MemorySubscription(
            agent_scope(agent_id, MemoryLevel.STM), team_scope(t), "team",
            filter=TagMatch.of(all_of={"summary"}),
            trigger=Trigger.any_of(Trigger.count(20), Trigger.timer(600)),
        ))
    return edges


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
        edges = [await reg.install_edge(e) for e in default_edges(agent_id, teams)]
        return Hierarchy(tuple(scopes), tuple(edges))
    finally:
        if registry is None:
            await reg.aclose()
