"""Access rules of an agent, checked in our code (Redis ACLs enforce the same rules).

An agent reads and writes its own ``agent:<id>:*`` scopes and the scopes of its teams
(``team:<t>`` and ``team:<t>:*``); it reads ``collective`` (only workers write there).
Everything else is refused with :class:`blackboard.AccessDenied` naming the scope.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from blackboard import AccessDenied, Blackboard

from .levels import MemoryLevel
from .naming import COLLECTIVE, agent_scopes, team_scope

__all__ = ["AccessPolicy", "provision_agent"]


@dataclass(frozen=True, slots=True)
class AccessPolicy:
    """What one agent may read and write."""

    agent_id: str
    teams: frozenset[str] = frozenset()
    #: The scopes the agent writes, by name: its level scopes, then each team's root and
    #: level scopes. Derived once: every store and recall asks for them.
    writable_names: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _readable: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = list(agent_scopes(self.agent_id))
        for t in sorted(self.teams):
            names += [team_scope(t), *(team_scope(t, lvl) for lvl in MemoryLevel)]
        object.__setattr__(self, "writable_names", tuple(names))
        object.__setattr__(self, "_readable", tuple(sorted({*names, COLLECTIVE})))

    def _own_or_team(self, scope_id: str) -> bool:
        if scope_id.startswith(f"agent:{self.agent_id}:"):
            return True
        return any(scope_id == f"team:{t}" or scope_id.startswith(f"team:{t}:")
                   for t in self.teams)

    def can_read(self, scope_id: str) -> bool:
        return scope_id == COLLECTIVE or self._own_or_team(scope_id)

    def can_write(self, scope_id: str) -> bool:
        return self._own_or_team(scope_id)

    def check_read(self, scope_id: str) -> str:
        if not self.can_read(scope_id):
            raise AccessDenied(f"agent {self.agent_id!r} may not read scope {scope_id!r}")
        return scope_id

    def check_write(self, scope_id: str) -> str:
        if not self.can_write(scope_id):
            raise AccessDenied(f"agent {self.agent_id!r} may not write scope {scope_id!r}")
        return scope_id

    def known_readable(self, registered: Iterable[str] = ()) -> list[str]:
        """The readable scopes by name (own levels, team roots and levels, collective)
        plus the readable ones among ``registered``; sorted, no duplicates."""
        extra = [s for s in registered if self.can_read(s)]
        if not extra:
            return list(self._readable)
        return sorted({*self._readable, *extra})

    def writable(self, scope_ids: Iterable[str]) -> list[str]:
        return [s for s in scope_ids if self.can_write(s)]


async def provision_agent(bb: Blackboard, agent_id: str, teams: Iterable[str] = ()) -> list[str]:
    """Register (as the service or admin user) every scope the agent may write: its level
    scopes with the default hierarchy, and each team's root and level scopes. A confined
    agent user may not write the registry or the cfg hashes, so ``blackboard acl grant``
    does this for it. Idempotent, and it only adds: registered scope configs and stored
    edges (an operator's trigger) are kept as they are. Returns the registered scope ids."""
    from .hierarchy import install_default_hierarchy
    from .registry import Registry

    teams = sorted(set(teams))
    reg = Registry(bb)
    try:
        h = await install_default_hierarchy(bb, agent_id, teams, registry=reg)
        done = [c.scope_id for c in h.scopes]
        for t in teams:
            for lvl in MemoryLevel:
                done.append((await reg.ensure_scope(team_scope(t, lvl))).scope_id)
        return sorted(set(done))
    finally:
        await reg.aclose()
