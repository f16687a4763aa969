"""The teams an agent belongs to, as the blackboard records them: its ACL grant (``acl
grant --team``, the teams Redis lets it read) and the dataflow edges from its scopes into
a team's (the default hierarchy's ``team`` edge). A caller that names no team (``blackboard
map --agent A``) still sees the agent's team memory.
"""

from __future__ import annotations

from blackboard import AccessDenied, Blackboard, InvalidScope, NotFound
from blackboard.acl import AclAdmin

from .naming import OwnerKind, agent_scopes, parse_scope
from .registry import Registry

__all__ = ["teams_of"]


async def _granted(bb: Blackboard, agent_id: str) -> set[str]:
    try:
        return set(await AclAdmin(bb).teams_of(agent_id))
    except (NotFound, AccessDenied):  # no ACL user, or a confined caller: edges alone
        return set()


def _team_of(scope_id: str) -> str | None:
    try:
        name = parse_scope(scope_id)
    except InvalidScope:  # an edge may target a scope outside the memory grammar
        return None
    return name.owner if name.kind is OwnerKind.TEAM else None


async def _fed(bb: Blackboard, agent_id: str) -> set[str]:
    """Teams whose scopes an edge from one of the agent's scopes writes to."""
    own = agent_scopes(agent_id)
    out: set[str] = set()
    for edge in await Registry(bb).list_edges():
        for scope in own:
            target = edge.match(scope)
            if target is not None and (team := _team_of(target)) is not None:
                out.add(team)
    return out


async def teams_of(bb: Blackboard, agent_id: str) -> tuple[str, ...]:
    """The agent's teams (granted or fed by its edges), sorted."""
    return tuple(sorted(await _granted(bb, agent_id) | await _fed(bb, agent_id)))
