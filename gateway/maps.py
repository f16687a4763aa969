"""The memory map a caller gets, one function for REST ``GET /v1/map`` and MCP
``memory_map``.

An agent's Redis user may not read the edge records nor the dataflow buffers (they name
other agents: docs/security.md), so its own read finds no edge. The gateway reads them on
its service connection instead, read only, and binds them to the scopes the agent's user
may read (:func:`memory.memory_map.build_memory_map`): the agent sees exactly the edges
out of its readable scopes that the operator's ``blackboard map --agent A`` shows, and
nothing about another agent's. The agent's ACL is not widened.
"""

from __future__ import annotations

from blackboard import Blackboard
from memory.memory_map import build_memory_map
from memory.registry import Registry
from memory.response_bodies import MapOut

from .caller import Caller
from .operator import operator_map

__all__ = ["caller_map"]


async def caller_map(caller: Caller, service: Blackboard | None) -> MapOut:
    """The caller's map: an operator's, every registered scope; an agent's, its readable
    scopes with their edges read on ``service`` (None, as over stdio: the edges the
    agent's user can read, none)."""
    if caller.operator:
        return MapOut.model_validate(await operator_map(caller))
    mem = caller.memory
    if service is None:
        m = await mem.memory_map()
    else:
        edges = await Registry(service).list_edges()
        m = await build_memory_map(caller.bb, mem.registry, mem.access,
                                   mem.readable_scopes(), edges=edges, buffers=service)
    return MapOut.model_validate(m.to_dict())
