"""The index role: embeds new and updated entries for recall (workers.indexer.IndexRole)."""

from __future__ import annotations

from ..indexer import ROLE, IndexRole
from .registry import RoleHost, RoleSpec

__all__ = ["SPECS", "IndexPlugin"]


class IndexPlugin:
    """:class:`IndexRole` on the worker's partition leases and consume counters."""

    def __init__(self, host: RoleHost) -> None:
        s = host.settings
        self.index = IndexRole(
            host.bb,
            host.id,
            partitions=host.leases.current,
            count=s.batch_count,
            block_ms=s.block_ms,
            claim_idle_ms=s.claim_idle_ms,
            max_deliveries=s.max_deliveries,
            claim_window_ms=host.claim_window_ms(),
            counters=host.consume_counters,
            oom_say_every_s=s.oom_say_every_s,
        )

    async def start(self) -> None:
        await self.index.start()

    async def stop(self) -> None:
        await self.index.stop()

    def counters(self) -> dict[str, int]:
        return self.index.counters()

    def failing_for(self) -> float:
        return self.index.streak.failing_for()

    def partitions_changed(self) -> None:
        """Nothing to wake: the index reader asks ``leases.current`` as it reads."""


# Leases split the partitions between index workers; the role reads the partitions'
# vector queues, not the bus (no consumer group).
SPECS: tuple[RoleSpec, ...] = (RoleSpec(ROLE, IndexPlugin, consumes=True, no_group=True),)
