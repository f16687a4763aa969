"""An agent's tables of contents (:mod:`retrieval.toc`): ``timeline`` reads a node and its
children over the agent's scopes, ``expand`` a segment's raw entries. Access is checked
here first; a confined agent's connection is also refused by Redis for another agent's
table (its ACL covers only its own and its teams' scope keys)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from blackboard import Entry, InvalidArgument, NotFound
from blackboard.toc import TocStore
from retrieval.toc import ROOT_ID, Level, TocNode, parse_at, parse_ref
from retrieval.toc_tree import TocTree, read_tree

if TYPE_CHECKING:
    from .agent import AgentMemory

__all__ = ["MAX_DEPTH", "expand", "timeline"]

#: Levels below the root: year, month, week, day, segment.
MAX_DEPTH = 5


def check_depth(depth: object) -> int:
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= MAX_DEPTH:
        raise InvalidArgument(f"depth: must be an integer from 0 to {MAX_DEPTH}, "
                              f"not {str(depth)[:20]!r}")
    return depth


async def timeline(mem: AgentMemory, level: str | None = None, at: str | None = None,
                   depth: int = 1, scope: str | None = None) -> TocTree:
    """The node of ``level`` holding ``at`` (``2023``, ``2023-05``, ``2023-05-08`` or a node
    id; neither: the root) with ``depth`` levels of children, merged over the agent's
    readable scopes (or ``scope`` alone). InvalidArgument names the bad field; NotFound
    when no table holds the node."""
    depth = check_depth(depth)
    if at is None or at == "":
        if level not in (None, "", Level.ROOT.value):
            raise InvalidArgument("at: a level needs a time (at=2023-05); without one the "
                                  "root is read")
        node = ROOT_ID
    else:
        node = parse_at(at, level)
    scopes = mem.recall_scopes([scope]) if scope else mem.readable_scopes()
    return await read_tree(mem.bb, scopes, node, depth)


async def _holder(mem: AgentMemory, node_id: str) -> str | None:
    """The one readable scope whose table holds segment ``node_id`` (None: let the ref's
    check name the problem); InvalidArgument when several do."""
    parse_ref(f"x#{node_id}")  # a segment id, or the field is named
    found = []
    for s in mem.readable_scopes():
        snap = await TocStore(mem.bb, s).read([node_id])
        if snap.nodes[node_id]:
            found.append(s)
    if len(found) > 1:
        raise InvalidArgument(f"segment: {node_id!r} is in several scopes "
                              f"({', '.join(found)}); send its ref <scope>#{node_id}")
    if not found:
        raise NotFound(f"no segment {node_id!r} in agent {mem.agent_id!r}'s tables of contents")
    return found[0]


async def expand(mem: AgentMemory, segment: str, scope: str | None = None) -> list[Entry]:
    """The raw entries of a segment (its ``ref``, ``<scope>#<segment id>``; its bare id when
    one of the agent's tables holds it, or with ``scope``), in time order, with their ids;
    entries deleted since are left out."""
    if scope is None and isinstance(segment, str) and segment and "#" not in segment:
        scope = await _holder(mem, segment)
    sid, node_id = parse_ref(segment if scope is None or "#" in segment
                             else f"{scope}#{segment}")
    mem.access.check_read(sid)
    snap = await TocStore(mem.bb, sid).read([node_id])
    seg = TocNode.from_json(sid, node_id, snap.nodes[node_id])
    if seg is None:
        raise NotFound(f"no segment {node_id!r} in the table of contents of {sid!r}")
    got = await mem.bb.scope(sid).get_many(list(seg.entries))
    return [e for e in got if e is not None]
