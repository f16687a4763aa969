"""The scopes a caller may see, and reading entries across them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from blackboard import AccessDenied, BlackboardError, Entry
from memory import MemorySubscription, default_edges, parse_scope

from ..caller import Caller
from ..operator import all_scopes

__all__ = ["bound_edges", "check_read", "edges", "find_entries", "owner_first",
           "visible_scopes"]


async def visible_scopes(caller: Caller) -> list[str]:
    """Every scope the caller may read: every registered one for an operator, else the
    agent's own, its teams' and ``collective``."""
    if caller.operator:
        return await all_scopes(caller)
    return caller.memory.readable_scopes()


def check_read(caller: Caller, scope: str) -> str:
    """``scope`` if the caller may read it; AccessDenied naming it otherwise (Redis would
    refuse the read too: this only makes the answer clear and early)."""
    if not caller.operator and not caller.memory.access.can_read(scope):
        raise AccessDenied(f"agent {caller.agent_id!r} may not read scope {scope!r}")
    return scope


async def edges(caller: Caller) -> list[MemorySubscription]:
    """The dataflow edges as the caller's user reads them from the registry. An agent's
    user may not read the edge records (Redis shows it none), so for an agent whose read
    finds none, its default hierarchy stands in: where its entries flow unless an operator
    installed other edges."""
    stored = await caller.memory.registry.list_edges()
    if stored or caller.operator:
        return stored
    return default_edges(caller.agent_id, caller.teams)


async def bound_edges(caller: Caller) -> list[dict[str, object]]:
    """Each edge bound to each visible source scope whose target is visible too, as the
    map shows edges; ``pending`` is None: the buffers are partition keys only the service
    user reads (an operator's map has them)."""
    visible = await visible_scopes(caller)
    seen = set(visible)
    out: list[dict[str, object]] = []
    for e in await edges(caller):
        for s in visible:
            t = e.match(s)
            if t is not None and t in seen:
                out.append({"edge": e.id, "source": s, "target": t,
                            "transformer": e.transformer, "pattern": e.source, "pending": None})
    return out


def owner_first(scope: str, scopes: Iterable[str]) -> list[str]:
    """``scopes`` with those of ``scope``'s owner first (where provenance usually leads)."""
    owner = _owner(scope)
    return sorted(scopes, key=lambda s: (_owner(s) != owner, s))


def _owner(scope: str) -> str:
    try:
        return parse_scope(scope).owner
    except BlackboardError:  # not a memory scope: it has no owner to group by
        return ""


async def find_entries(caller: Caller, ids: Sequence[str],
                       scopes: Sequence[str]) -> dict[str, Entry]:
    """Each of ``ids`` found in one of ``scopes`` (one round trip per scope searched, in
    order, stopping once all are found). Ids not found are absent from the result."""
    found: dict[str, Entry] = {}
    for s in scopes:
        want = [i for i in ids if i not in found]
        if not want:
            break
        try:
            got = await caller.bb.scope(s).get_many(want)
        except AccessDenied:
            continue
        for e in got:
            if e is not None:
                found[e.id] = e
    return found
