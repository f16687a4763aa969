"""The edges one worker role runs, and the edges version each partition had when they were
loaded.

The registry bumps every partition's edges version on each edge change before the change
returns (:mod:`memory.edge_registry`). A runner matches a batch against :attr:`EdgeSet.edges`
and hands ``buffer.lua`` the partition's version from :meth:`EdgeSet.version`; the script
refuses the batch if the version moved, and the runner reloads (:meth:`EdgeSet.stale`) and
matches again. So the edges a batch is matched against are never older than any change that
returned before the batch's events were written; no refresh period is involved.

Invariant: a stored version was read *before* the edge listing it is paired with, so it can
only understate what the listing knows (costing one needless reload), never overstate it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection

from memory.registry import Registry
from memory.subscriptions import MemorySubscription

__all__ = ["EdgeSet"]

log = logging.getLogger(__name__)


class EdgeSet:
    """Edges whose transformer is one of ``transformers``, loaded from ``registry``."""

    def __init__(self, registry: Registry, transformers: Collection[str]) -> None:
        self.registry = registry
        self.transformers = frozenset(transformers)
        self.edges: list[MemorySubscription] = []
        self._versions: dict[int, str] = {}
        self._lock = asyncio.Lock()
        #: Reloads done (each one reads the versions and lists the edges: two round trips).
        self.reloads = 0

    def version(self, partition: int) -> str:
        """The version :attr:`edges` were loaded under in ``partition`` ("" before the first
        load: never a real version, so buffer.lua makes the caller load first)."""
        return self._versions.get(partition, "")

    def get(self, edge_id: str) -> MemorySubscription | None:
        for e in self.edges:
            if e.id == edge_id:
                return e
        return None

    async def reload(self) -> None:
        """Read every partition's version, then the edges."""
        async with self._lock:
            await self._reload()

    async def check(self) -> bool:
        """Reload if any partition's version moved since the last load (one round trip when
        none did); whether it reloaded. The backstop for a process that neither buffers nor
        fires for a while: both of those check the version on their own."""
        async with self._lock:
            if await self.registry.edges_versions() == self._versions:
                return False
            await self._reload()
            return True

    async def stale(self, partition: int, used: str, current: str) -> None:
        """``partition`` is at version ``current``, not the ``used`` one the caller matched
        under: reload unless another caller already did since (concurrent readers of several
        partitions that all saw one change reload once)."""
        async with self._lock:
            if self._versions.get(partition, "") != used:
                return
            await self._reload()
            log.debug("edges of partition %d: version %s -> %s (%s seen)", partition, used,
                      self._versions.get(partition), current)

    async def _reload(self) -> None:
        versions = await self.registry.edges_versions()
        edges = [e for e in await self.registry.list_edges() if e.transformer in self.transformers]
        if [e.id for e in edges] != [e.id for e in self.edges]:
            log.info("edges now %s", ", ".join(e.id for e in edges) or "none")
        self.edges, self._versions = edges, versions
        self.reloads += 1
