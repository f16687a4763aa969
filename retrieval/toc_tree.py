"""Reading a table of contents as a tree: a node and its children, ``depth`` levels down,
over one scope or merged over several (the same node id in several scopes is one node of
the view, :func:`retrieval.toc.merge`; segments stay per scope, named by their ``ref``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from blackboard import Blackboard, NotFound
from blackboard.toc import TocStore

from .toc import Level, TocNode, merge, node_of

__all__ = ["TocTree", "read_tree"]

#: Children listed per node at most (a year's months, a day's segments...).
MAX_CHILDREN = 400


@dataclass(frozen=True)
class TocTree:
    """A node and its children (``depth`` levels of them; none below ``depth``)."""

    node: TocNode
    children: list[TocTree] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d = self.node.as_dict()
        d["nodes"] = [c.as_dict() for c in self.children]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TocTree:
        """The tree :meth:`as_dict` made (REST's answer)."""
        return cls(node_of(d), [cls.from_dict(c) for c in d.get("nodes", [])])


async def _read(bb: Blackboard, scopes: Sequence[str], node_id: str) -> list[TocNode]:
    out = []
    for s in scopes:
        snap = await TocStore(bb, s).read([node_id])
        n = TocNode.from_json(s, node_id, snap.nodes[node_id])
        if n is not None:
            out.append(n)
    return out


async def _children(bb: Blackboard, parts: Sequence[TocNode], depth: int) -> list[TocTree]:
    if depth <= 0:
        return []
    kids: dict[str, list[TocNode]] = {}
    for p in parts:
        ids = list(p.children)[:MAX_CHILDREN]
        if not ids:
            continue
        snap = await TocStore(bb, p.scope).read(ids)
        for i in ids:
            n = TocNode.from_json(p.scope, i, snap.nodes[i])
            if n is not None:
                # segments are per scope; the levels above merge by id
                kids.setdefault(n.ref if n.level is Level.SEGMENT else i, []).append(n)
    out = []
    for key in sorted(kids, key=lambda k: (kids[k][0].start_ms, k)):
        group = kids[key]
        out.append(TocTree(merge(group), await _children(bb, group, depth - 1)))
    return out


async def read_tree(bb: Blackboard, scopes: Sequence[str], node_id: str, depth: int) -> TocTree:
    """Node ``node_id`` merged over ``scopes`` with ``depth`` levels of children; NotFound
    when no scope's table holds it. Scopes are read as given (the caller checks access)."""
    parts = await _read(bb, scopes, node_id)
    if not parts:
        raise NotFound(f"no table of contents node {node_id!r} in {', '.join(scopes)[:200]}")
    return TocTree(merge(parts), await _children(bb, parts, depth))
