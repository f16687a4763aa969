"""The edges version: one counter per partition, bumped on every dataflow edge change.

Workers match bus events against the edges they loaded under a version, and ``buffer.lua``
refuses a batch matched under an older one; the edge registry bumps every partition's
counter after each install, update or removal, and workers compare what they loaded with
:meth:`EdgesVersions.read` (``bb.edges_versions``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .codec import as_str
from .keys import PartitionKeys

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["EdgesVersions", "version_string"]


def version_string(raw: Any) -> str:
    """An edges-version counter's value as the string buffer.lua compares; a partition whose
    counter was never bumped is at version "0"."""
    return "0" if raw is None else as_str(raw)


class EdgesVersions:
    """Every partition's edges version (``bb.edges_versions``)."""

    def __init__(self, bb: Blackboard) -> None:
        self.bb = bb

    async def read(self) -> dict[int, str]:
        """Every partition's edges version, in one round trip. Read it *before* listing the
        edges: a version read after could vouch for a change the listing missed."""
        parts = [PartitionKeys(p) for p in range(self.bb.partitions)]
        keys = [part.edges_version for part in parts]
        if self.bb.cluster:
            # the counters live in as many slots as partitions: a GET each, pipelined
            async with self.bb.client.pipeline(transaction=False) as pipe:
                for k in keys:
                    pipe.get(k)
                got = await pipe.execute()
        else:
            # One command, not one per partition: every worker polls this (the backstop of
            # EdgeSet.check), and an idle worker's command rate is bounded (issue 23).
            got = await self.bb.client.mget(keys)
        return {part.partition: version_string(v) for part, v in zip(parts, got, strict=True)}

    async def bump(self) -> None:
        """Bump every partition's edges version (one round trip): workers reload the edges."""
        async with self.bb.client.pipeline(transaction=False) as pipe:
            for p in range(self.bb.partitions):
                pipe.incr(PartitionKeys(p).edges_version)
            await pipe.execute()
