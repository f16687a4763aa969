"""The relay role: every consuming worker process moves its partitions' inbox items to the
partition buses (``blackboard.relay``), so the buses are written by the service user only.

One task per owned partition: relay what is there, then block on the inbox until the next
item (``BLMOVE``, ``block_s`` at a time) — an idle relay costs one command per partition
every ``block_s``. A failed round is logged, counted and retried after a backoff; the task
never dies while its partition is owned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from blackboard import Blackboard
from blackboard.relay import Inbox

__all__ = ["RelayCounters", "RelayRole"]

log = logging.getLogger(__name__)


@dataclass
class RelayCounters:
    relayed: int = 0
    #: forged, replayed or stale inbox items, dropped by relay.lua
    dropped: int = 0
    errors: int = 0


@dataclass
class RelayRole:
    bb: Blackboard
    partitions: Callable[[], set[int]]
    batch: int = 1000
    block_s: float = 10.0
    counters: RelayCounters = field(default_factory=RelayCounters)

    def __post_init__(self) -> None:
        self._stopping = asyncio.Event()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="relay")

    def partitions_changed(self) -> None:
        """Follow a new lease set now rather than at the next check."""
        self._changed.set()

    async def stop(self) -> None:
        self._stopping.set()
        self._changed.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        loops: dict[int, asyncio.Task[None]] = {}
        try:
            while not self._stopping.is_set():
                owned = self.partitions()
                for p in [p for p, t in loops.items() if p not in owned or t.done()]:
                    loops.pop(p).cancel()
                for p in owned - loops.keys():
                    loops[p] = asyncio.create_task(self._relay_loop(p), name=f"relay-{p}")
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), 1.0)
        finally:
            for t in loops.values():
                t.cancel()
            await asyncio.gather(*loops.values(), return_exceptions=True)

    async def _relay_loop(self, p: int) -> None:
        inbox = Inbox(self.bb, p)
        backoff = 0.1
        while not self._stopping.is_set():
            try:
                r = await inbox.relay(self.batch)
                self.counters.relayed += r.relayed
                if r.dropped:
                    self.counters.dropped += r.dropped
                    log.warning("relay p%d: dropped %d forged, replayed or stale inbox items",
                                p, r.dropped)
                if r.left == 0:
                    await inbox.wait(self.block_s)
                backoff = 0.1
            except asyncio.CancelledError:
                raise
            except Exception:
                self.counters.errors += 1
                log.exception("relay p%d failed; retrying in %.1fs", p, backoff)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), backoff)
                backoff = min(backoff * 2, 5.0)
