"""Scope ids of memory levels and their parsing back (scope id -> owner kind, owner, level).

Grammar: ``agent:<a>:<level>`` (long-term levels as ``agent:<a>:ltm:<level>``),
``team:<t>`` and ``team:<t>:<level>``, ``collective``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from blackboard import InvalidScope
from blackboard.validation import validate_scope

from .levels import MemoryLevel

__all__ = [
    "COLLECTIVE",
    "OwnerKind",
    "ScopeName",
    "agent_scope",
    "agent_scopes",
    "parse_scope",
    "team_scope",
]

COLLECTIVE = "collective"


class OwnerKind(StrEnum):
    AGENT = "agent"
    TEAM = "team"
    COLLECTIVE = "collective"


@dataclass(frozen=True, slots=True)
class ScopeName:
    """A parsed memory scope id. ``owner`` is empty for ``collective``; ``level`` is None
    for a team's root scope and for ``collective``."""

    kind: OwnerKind
    owner: str
    level: MemoryLevel | None

    @property
    def scope_id(self) -> str:
        if self.kind is OwnerKind.COLLECTIVE:
            return COLLECTIVE
        if self.kind is OwnerKind.TEAM:
            return team_scope(self.owner, self.level)
        assert self.level is not None
        return agent_scope(self.owner, self.level)


def _check_name(kind: str, name: str) -> str:
    if not isinstance(name, str) or not name or ":" in name:
        raise InvalidScope(f"{kind} id must be one scope segment (no ':'): {name!r:.80}")
    validate_scope(name)
    return name


def agent_scope(agent_id: str, level: MemoryLevel | str) -> str:
    """``agent:<a>:<level>``; long-term levels are ``agent:<a>:ltm:<level>``."""
    return f"agent:{_check_name('agent', agent_id)}:{MemoryLevel(level).segment}"


def agent_scopes(agent_id: str) -> list[str]:
    """All level scopes of one agent, sensory first."""
    return [agent_scope(agent_id, lvl) for lvl in MemoryLevel]


def team_scope(team_id: str, level: MemoryLevel | str | None = None) -> str:
    """``team:<t>``, or ``team:<t>:<level>`` for a team with its own levels."""
    base = f"team:{_check_name('team', team_id)}"
    return base if level is None else f"{base}:{MemoryLevel(level).segment}"


def parse_scope(scope_id: str) -> ScopeName:
    """Parse a memory scope id; :class:`InvalidScope` if it is not one of the grammar."""
    validate_scope(scope_id)
    if scope_id == COLLECTIVE:
        return ScopeName(OwnerKind.COLLECTIVE, "", None)
    parts = scope_id.split(":")
    if parts[0] in ("agent", "team") and len(parts) >= 2:
        kind = OwnerKind(parts[0])
        rest = ":".join(parts[2:])
        if kind is OwnerKind.TEAM and not rest:
            return ScopeName(kind, parts[1], None)
        level = MemoryLevel.from_segment(rest)
        if level is not None:
            return ScopeName(kind, parts[1], level)
    raise InvalidScope(f"{scope_id!r:.80} is not a memory scope (agent:<a>:<level>, "
                       "team:<t>[:<level>] or collective)")
