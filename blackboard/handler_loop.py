"""Consuming with a handler per batch, concurrently across partitions.

:func:`handle_batches` runs ``handler`` inside each partition's reader task, so partitions are
handled in parallel (one batch in hand per partition, in order within it) while
:func:`blackboard.consumer.consume` funnels every partition through one loop. A worker
whose handler is one round trip (the dataflow's buffer script) would otherwise wait for
Redis once per batch of every partition in turn; on a remote Redis that wait is the
throughput.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from .consumer import Batch, ConsumeCounters, ConsumeOptions, PartitionSource, ReaderPool

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["BatchHandler", "handle_batches"]

#: Handles one batch: acks it (or marks it acked) once its effect is durable; a batch left
#: unacked is released (re-delivered later); an exception is logged by the caller's
#: handler itself or surfaces from :func:`handle_batches`.
BatchHandler = Callable[[Batch], Awaitable[None]]


class _HandlerSink:
    """Runs the handler in the reader task that delivers the batch."""

    def __init__(self, handler: BatchHandler, pool: Callable[[], ReaderPool]) -> None:
        self.handler, self.pool = handler, pool
        self.error: BaseException | None = None
        self.failed = asyncio.Event()
        self.in_hand = 0
        self.idle = asyncio.Event()
        self.idle.set()

    async def put(self, item: Batch | BaseException) -> None:
        if isinstance(item, BaseException):
            self.error = item
            self.failed.set()
            return
        if not self.pool().current(item):
            item.release()  # partition given up meanwhile: its new owner re-delivers
            return
        self.in_hand += 1
        self.idle.clear()
        try:
            await self.handler(item)
        finally:
            if not item._done.is_set():
                item.release()
            self.in_hand -= 1
            if not self.in_hand:
                self.idle.set()


async def handle_batches(
    bb: Blackboard,
    role: str,
    consumer: str,
    handler: BatchHandler,
    stopping: asyncio.Event,
    partitions: PartitionSource = None,
    opts: ConsumeOptions | None = None,
    finish_timeout_s: float = 30.0,
    changed: asyncio.Event | None = None,
    counters: ConsumeCounters | None = None,
) -> None:
    """Run ``handler`` on every batch of ``role`` for ``consumer`` until ``stopping`` is set.

    ``partitions`` is re-read every ``opts.rebalance_every_ms`` and at once when
    ``changed`` is set (a lease holder sets it when its partitions change). On stop,
    readers take no new batch, batches in hand are finished (for at most
    ``finish_timeout_s`` seconds), then the readers are closed. A reader's fatal error
    (Redis unreachable, a handler's exception) closes every reader and is raised.
    ``counters`` collects what the readers skipped or dropped.
    """
    opts = opts or ConsumeOptions()
    sink = _HandlerSink(handler, lambda: pool)
    pool = ReaderPool(bb, role, consumer, partitions, opts, sink, counters)
    pool.rebalance()
    changed = changed or asyncio.Event()
    stop = asyncio.ensure_future(stopping.wait())
    failed = asyncio.ensure_future(sink.failed.wait())
    try:
        while not stopping.is_set() and not sink.failed.is_set():
            change = asyncio.ensure_future(changed.wait())
            try:
                await asyncio.wait(
                    {stop, failed, change},
                    timeout=opts.rebalance_every_ms / 1000,
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                change.cancel()
            changed.clear()
            pool.rebalance()
        if sink.error is not None:
            raise sink.error
        pool.retire_all()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(sink.idle.wait(), finish_timeout_s)
    finally:
        stop.cancel()
        failed.cancel()
        await pool.close()
