"""A scope's table of contents as Redis holds it: JSON nodes in one hash, the segment of
every placed entry in another (``ScopeKeys.toc``, ``ScopeKeys.toc_placed``).

The nodes' meaning (levels, spans, summaries) is :mod:`retrieval.toc`'s; building them is
the ``timeline`` worker role's (:mod:`consolidation.toc`). This module only reads and writes
them: every change goes through ``toc.lua``, compare-and-set on the hash's version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .keys import ScopeKeys, partition_of
from .scripts import raise_for_script_error, run_script

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["PLACED", "STALE", "TocSnapshot", "TocStore"]

#: The hash field holding the version (node ids never start with ``_``).
VERSION = "_v"
#: :meth:`TocStore.apply`: the table changed since it was read / an entry is placed.
STALE, PLACED = -1, -2


def _text(v: bytes | str | None) -> str | None:
    return v.decode() if isinstance(v, bytes) else v


@dataclass(frozen=True, slots=True)
class TocSnapshot:
    """Nodes as read (id -> JSON, None where absent) at ``version``."""

    version: str
    nodes: dict[str, str | None]


class TocStore:
    """The table of contents of scope ``scope_id``, read and changed over ``bb``'s client
    (a confined agent reads only its own scopes' tables: Redis refuses the others)."""

    def __init__(self, bb: Blackboard, scope_id: str) -> None:
        self.bb = bb
        self.scope_id = scope_id
        self.keys = ScopeKeys(scope_id, partition_of(scope_id, bb.partitions))

    async def read(self, ids: Sequence[str]) -> TocSnapshot:
        """The nodes ``ids`` and the version, in one round trip."""
        got = await self.bb.client.hmget(self.keys.toc, [VERSION, *ids])
        return TocSnapshot(_text(got[0]) or "0",
                           {i: _text(v) for i, v in zip(ids, got[1:], strict=True)})

    async def read_all(self) -> TocSnapshot:
        """Every node (O(nodes): for a rebuild, a check or a small scope)."""
        h = await self.bb.client.hgetall(self.keys.toc)
        out = {_text(k) or "": _text(v) for k, v in h.items()}
        version = out.pop(VERSION, None) or "0"
        return TocSnapshot(version, out)

    async def placed(self, entry_ids: Sequence[str]) -> dict[str, str]:
        """Entry id -> segment id, for the given entries already placed."""
        if not entry_ids:
            return {}
        got = await self.bb.client.hmget(self.keys.toc_placed, list(entry_ids))
        return {e: s for e, v in zip(entry_ids, got, strict=True) if (s := _text(v))}

    async def apply(self, version: str, nodes: Mapping[str, str],
                    placed: Mapping[str, str]) -> int:
        """Write ``nodes`` (id -> JSON) and ``placed`` (entry id -> segment id) if the table
        is still at ``version`` and none of those entries is placed yet; -> the new version,
        or (nothing written) :data:`STALE` when the table changed meanwhile,
        :data:`PLACED` when an entry is placed already. A first delivery, the common
        case, so needs no read of the placements beforehand."""
        args: list[str] = ["apply", version, str(len(nodes))]
        for k, v in nodes.items():
            args += [k, v]
        for k, v in placed.items():
            args += [k, v]
        try:
            got = await run_script(self.bb.client, "toc", [self.keys.toc, self.keys.toc_placed],
                                   args)
        except Exception as exc:
            raise_for_script_error(exc, scope=self.scope_id)
            raise
        return int(got)

    async def reset(self) -> None:
        """Delete the table (a rebuild starts from nothing)."""
        try:
            await run_script(self.bb.client, "toc", [self.keys.toc, self.keys.toc_placed],
                             ["reset", "0", "0"])
        except Exception as exc:
            raise_for_script_error(exc, scope=self.scope_id)
            raise
