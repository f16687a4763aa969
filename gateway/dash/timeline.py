"""The timeline view's reads (issue 28): an agent's table of contents, a node and its
children, and a segment's raw entries, as REST ``GET /v1/timeline`` and
``/v1/timeline/expand`` answer them, for the agent the page names.

An agent token reads only its own agent's table (``caller.memory``: the same call as the
REST routes, and Redis confines its user anyway); naming another agent is a 403. An
operator token picks any agent with scopes: the read runs on the operator's connection
through that agent's :class:`memory.AgentMemory`, so its access rules still apply (its own
scopes and ``collective``; a segment of another agent is refused). Teams are a token's
claim, not recorded per agent, so an operator's view leaves team scopes out: the
``timeline`` role keeps tables only for agent scopes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from blackboard import BlackboardError, Entry, NotFound
from memory import AgentMemory, parse_scope

from ..caller import Caller
from ..operator import all_scopes
from ..refusals import Forbidden, InvalidParameter

__all__ = ["agents_of", "expand_for", "timeline_for"]


async def agents_of(caller: Caller) -> list[str]:
    """The agents whose table the caller may pick: its own for an agent token; for an
    operator, every agent with a registered scope."""
    if not caller.operator:
        return [caller.agent_id]
    out: set[str] = set()
    for s in await all_scopes(caller):
        if s.startswith("agent:"):
            try:
                out.add(parse_scope(s).owner)
            except BlackboardError:  # a registered scope outside the grammar: no agent's
                continue
    return sorted(out)


@asynccontextmanager
async def memory_of(caller: Caller, agent: str | None) -> AsyncIterator[AgentMemory]:
    """The memory the timeline of ``agent`` is read through (None: the caller's own)."""
    if agent is None or agent == caller.agent_id:
        yield caller.memory
        return
    if not caller.operator:
        raise Forbidden(f"agent {caller.agent_id!r} may not read agent {agent!r}'s timeline: "
                        "an agent token sees only its own (leave out agent=, or use an "
                        "operator token)", field="agent")
    try:
        mem = AgentMemory(caller.bb, agent, default_retriever=False)
    except BlackboardError as exc:
        raise InvalidParameter(f"agent: {exc}", field="agent") from None
    try:
        yield mem
    finally:
        await mem.aclose()


async def timeline_for(caller: Caller, agent: str | None, level: str | None, at: str | None,
                       depth: int) -> dict[str, Any]:
    """``{"agent", "agents", "tree", "missing"}``: ``tree`` is REST's answer for that agent
    (null when its table has no such node yet, ``missing`` then says which); ``agents``
    those the caller may pick (an operator naming none gets the first of them, unless its
    own agent has scopes). Bad input raises the library's InvalidArgument."""
    agents = await agents_of(caller)
    if agent is None and agents and caller.agent_id not in agents:
        agent = agents[0]
    async with memory_of(caller, agent) as mem:
        tree: dict[str, Any] | None = None
        missing = None
        try:
            tree = (await mem.timeline(level, at, depth)).as_dict()
        except NotFound as exc:
            missing = str(exc)
        return {"agent": mem.agent_id, "agents": agents, "tree": tree,
                "missing": missing}


async def expand_for(caller: Caller, agent: str | None, segment: str) -> list[Entry]:
    """The raw entries of ``agent``'s segment ``segment`` (its ref), as REST's
    ``/v1/timeline/expand`` reads them."""
    async with memory_of(caller, agent) as mem:
        return await mem.expand(segment)
