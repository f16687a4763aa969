"""The maintenance role: the scheduled jobs of :class:`workers.maintenance.Maintenance`
(sweep, prune, capacity, trim, dedupe, reindex, schedule repair) on an APScheduler."""

from __future__ import annotations

from typing import Any

from ..maintenance import Maintenance
from .registry import RoleHost, RoleSpec

__all__ = ["NAME", "SPECS", "MaintenancePlugin"]

NAME = "maintenance"


class MaintenancePlugin:
    """Owns the scheduler; reads no bus, so holds no partition leases."""

    def __init__(self, host: RoleHost) -> None:
        self.maintenance = Maintenance(host.bb, host.id, host.settings)
        self._scheduler: Any = None

    async def start(self) -> None:
        from apscheduler.schedulers.asyncio import AsyncIOScheduler

        from retrieval.embedders import default_embedder

        from ..indexer import bind_reembed

        emb = default_embedder()
        if emb is not None:  # no dense model installed: nothing to re-embed with
            self.maintenance.reembed = bind_reembed(self.maintenance.bb, emb)
            self.maintenance.embedder_name = emb.name
            # Dedupe stays exact here: a merge by meaning deletes the entries it folds,
            # and MiniLM puts distinct steps within 0.95 ("round 0 step 1" / "round 1 step
            # 0" did, and a summary never saw the deleted one); Maintenance(embedder=...)
            # turns it on where the data allows.
        self._scheduler = AsyncIOScheduler()
        self.maintenance.schedule(self._scheduler)
        self._scheduler.start()

    async def stop(self) -> None:
        if self._scheduler is None:
            return
        # No new runs; the runs in hand finish their partition before the scheduler
        # shuts down (its shutdown cancels them mid-command).
        self._scheduler.pause()
        try:
            await self.maintenance.drain()
        finally:
            self._scheduler.shutdown(wait=False)

    def counters(self) -> dict[str, int]:
        return self.maintenance.counters()

    def failing_for(self) -> float:
        return 0.0  # reads no bus: its job failures are counted, not a health signal

    def partitions_changed(self) -> None:
        """Nothing to follow: the jobs lease each partition per run (workers.leases.JobLease)."""


SPECS: tuple[RoleSpec, ...] = (RoleSpec(NAME, MaintenancePlugin, consumes=False),)
