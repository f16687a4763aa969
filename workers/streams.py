"""Iterating a consume stream until a stop event, leaving the batch in hand finished; the
failure streak of a loop that reopens its stream after errors."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from blackboard import Batch, ConsumeOptions
from blackboard.errors import OutOfMemory

if TYPE_CHECKING:
    from .roles.registry import RoleHost

__all__ = ["FailureStreak", "bus_options", "reopen_until_stopped", "until_stopped"]


class FailureStreak:
    """Since when a loop that reopens after errors has failed without recovering.

    A run counts as recovered once it has lasted ``settle_s`` or handled something: an idle
    consumer handles nothing for minutes, so lasting is the sign it works again."""

    def __init__(self, settle_s: float = 5.0) -> None:
        self.settle_s = settle_s
        self._since: float | None = None
        self._run_started: float | None = None

    def running(self) -> None:
        """A (re)opened run starts now."""
        self._run_started = time.monotonic()

    def failed(self) -> bool:
        """The run failed; -> whether this starts a new streak (reset the backoff)."""
        now = time.monotonic()
        fresh = self._since is None or self._lasted(now)
        if fresh:
            self._since = now
        self._run_started = None
        return fresh

    def succeeded(self) -> None:
        self._since = None

    def failing_for(self) -> float:
        """Seconds the streak has lasted; 0 when healthy."""
        now = time.monotonic()
        if self._since is None or self._lasted(now):
            return 0.0
        return now - self._since

    def _lasted(self, now: float) -> bool:
        return self._run_started is not None and now - self._run_started >= self.settle_s


async def until_stopped(
    stream: AsyncIterator[Batch], stopping: asyncio.Event
) -> AsyncIterator[Batch]:
    """Batches of ``stream`` until ``stopping`` is set; the stream is closed on exit.

    The wait for the next batch races the stop event, so a worker told to stop does not sit
    in a blocking read; a batch already yielded is finished by the caller first (SIGTERM
    finishes the batch in hand).
    """
    stop = asyncio.ensure_future(stopping.wait())
    try:
        it = stream.__aiter__()
        while not stopping.is_set():
            nxt = asyncio.ensure_future(it.__anext__())
            done, _ = await asyncio.wait({nxt, stop}, return_when=asyncio.FIRST_COMPLETED)
            if nxt not in done:
                nxt.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                    await nxt
                return
            yield nxt.result()
    finally:
        stop.cancel()
        await stream.aclose()  # type: ignore[attr-defined]


async def reopen_until_stopped(
    once: Callable[[], Awaitable[None]],
    streak: FailureStreak,
    stopping: asyncio.Event,
    sleep: Callable[[int], Awaitable[bool]],
    log: logging.Logger,
    on_oom: Callable[[], None] | None = None,
) -> None:
    """Run ``once`` (a consume stream, until it ends) again and again until ``stopping``;
    a failed run (Redis unreachable, a reader's error) is logged and reopened after a
    backoff doubling from 0.1 s to 5 s, restarted with each new failure streak, so a
    stream is never left dead while its leases are renewed. With ``on_oom``, Redis out of
    memory is no failure (the partitions are kept): ``on_oom`` says so and the run
    reopens after the same backoff. ``sleep(ms)``: False once stopping."""
    backoff = 0.1
    while not stopping.is_set():
        streak.running()
        try:
            await once()
            backoff = 0.1
        except Exception as exc:
            if on_oom is not None and isinstance(exc, OutOfMemory):
                on_oom()
            else:
                if streak.failed():
                    backoff = 0.1
                log.exception("consume loop failed; reopening in %.1fs", backoff)
            if not await sleep(int(backoff * 1000)):
                return
            backoff = min(backoff * 2, 5.0)


def bus_options(host: RoleHost, count: int) -> ConsumeOptions:
    """How a role reads its partitions' buses: ``count`` events a read, the worker's block
    and claim settings. A new partition owner takes over what a retiring reader holds at
    once (``takeover_idle_ms=0``), within a second instead of minutes: safe only for a role
    that handling an event twice leaves as once (the edge runner's buffer script appends
    only events still pending for the caller; placing in a table of contents is
    idempotent)."""
    s = host.settings
    return ConsumeOptions(
        count=count,
        block_ms=s.block_ms,
        claim_idle_ms=s.claim_idle_ms,
        claim_every_ms=min(s.claim_idle_ms, 1_000),
        claim_window_ms=host.claim_window_ms(),
        takeover_idle_ms=0,
        max_deliveries=s.max_deliveries,
    )
