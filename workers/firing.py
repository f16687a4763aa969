"""The fire loops of a consolidation role: one per owned partition, each firing its due
buffers when the partition's reader buffered items, then sleeping until the next buffer of
the role comes due by age, timer or retry -- or, with none, until woken. An idle partition
costs nothing; a buffer waiting on a count trigger is woken by the reader, not polled."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from blackboard import Blackboard
from blackboard.errors import OutOfMemory
from blackboard.pending import PendingBuffer
from memory.subscriptions import MemorySubscription

from .dataflow import OOM_RETRY_S, BufferItem, DataflowRunner
from .edgeset import EdgeSet
from .oom import OomNotice

__all__ = ["FireLoops"]

log = logging.getLogger(__name__)


class FireLoops:
    """Keeps one fire loop per owned partition (``owned()``) until ``stopping`` is set;
    ``changed`` is set when the owned set changed, :meth:`wake` when a partition's reader
    buffered items. ``min_wait_ms`` bounds how often a loop looks again (and is the wait
    after a failed check)."""

    def __init__(
        self,
        bb: Blackboard,
        runner: DataflowRunner,
        edges: EdgeSet,
        owned: Callable[[], set[int]],
        stopping: asyncio.Event,
        min_wait_ms: int,
        name: str,
        oom_say_every_s: float = 30.0,
    ) -> None:
        self.bb, self.runner, self.edges = bb, runner, edges
        self.owned, self.stopping = owned, stopping
        self.min_wait_s = min_wait_ms / 1000
        self.name = name
        self.due: dict[int, asyncio.Event] = {}
        self.changed = asyncio.Event()
        self._oom = OomNotice(f"{name} trigger checks", oom_say_every_s)

    def wake(self, p: int) -> None:
        ev = self.due.get(p)
        if ev is not None:
            ev.set()

    async def run(self) -> None:
        """Partitions fire independently, so one partition's round trips overlap another's
        transformer."""
        loops: dict[int, asyncio.Task[None]] = {}
        try:
            while not self.stopping.is_set():
                for p in [p for p, t in loops.items() if t.done()]:
                    del loops[p]  # given up: restarted below if owned again
                    self.due.pop(p, None)
                for p in self.owned() - loops.keys():
                    self.due[p] = asyncio.Event()
                    loops[p] = asyncio.create_task(self._loop(p), name=f"{self.name}-fire-{p}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), self.min_wait_s)
                self.changed.clear()
        finally:
            # A fire loop finishes the batch in hand (its transformer and trim) first; one
            # asleep until woken is woken to see the stop.
            for ev in self.due.values():
                ev.set()
            await asyncio.gather(*loops.values(), return_exceptions=True)

    async def _loop(self, p: int) -> None:
        due = self.due[p]
        part = self.bb.pending(p)
        while not self.stopping.is_set() and p in self.owned():
            due.clear()
            timeout: float | None = self.min_wait_s  # after an error
            try:
                mine = [k for k in await part.keys() if self._edge_of(k, part) is not None]
                if mine:
                    await self.runner.check(p, mine)
                timeout = await self._next_due_s(part, mine)
            except OutOfMemory:
                self._oom.say("the buffers wait until memory is freed")
                timeout = OOM_RETRY_S
            except Exception:
                log.exception("trigger check on partition %d failed; will retry", p)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(due.wait(), timeout)

    def _edge_of(self, key: str, part: PendingBuffer) -> MemorySubscription | None:
        return self.edges.get(part.parse(key)[0])

    async def _next_due_s(self, part: PendingBuffer, keys: list[str]) -> float | None:
        """Seconds until a buffer of ``keys`` comes due without a new item (its head's age
        trigger, its timer, a retry after a failed fire), at least ``min_wait_ms``; None
        when none can."""
        # The runner's schedule (seconds, Redis clock): retries, and timers from the last fire.
        dues = [r for r in (self.runner.retry_at(k) for k in keys) if r is not None]
        aged: list[tuple[str, float]] = []
        for k in keys:
            edge = self._edge_of(k, part)
            if edge is None:
                continue
            if edge.trigger.every is not None:
                dues.append(self.runner.last_fired(k) + edge.trigger.every)
            if edge.trigger.max_age is not None:
                aged.append((k, edge.trigger.max_age))
        if aged:
            heads = await part.heads([k for k, _ in aged])
            dues += [BufferItem.decode(h).at / 1000 + age
                     for (_, age), h in zip(aged, heads, strict=True) if h is not None]
        if not dues:
            return None
        return max(self.min_wait_s, min(dues) - self.bb.now_ms() / 1000)
