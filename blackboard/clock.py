"""Redis's clock, as seen from this process.

The scripts stamp entries with Redis ``TIME`` (created, updated, expires, strength_at), so
every read-side comparison with those stamps (expired yet? how decayed? how recent?) must
use the same clock. A client machine whose clock is off by seconds would otherwise hide
live entries or show expired ones, and decay them by the wrong age. The offset is measured
with ``TIME`` on connect (the best of a few round trips) and re-measured in the background
once it is older than ``resync_s``, so reading the clock never waits on Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

__all__ = ["ServerClock"]

log = logging.getLogger(__name__)


def _time_reply(reply: Any) -> tuple[int, int]:
    """(seconds, microseconds) from a TIME reply; a cluster client may answer per node
    (a dict), and any node will do: a cluster's nodes keep one clock or none."""
    if isinstance(reply, dict):
        reply = next(iter(reply.values()))
    sec, usec = reply
    return int(sec), int(usec)


class ServerClock:
    """Wall-clock ms on the Redis server's clock: the local clock plus a measured offset.

    Until :meth:`sync` has run the offset is 0 (the local clock). The error of the offset is
    at most half the round trip it was measured with (``uncertainty_ms``).
    """

    def __init__(self, resync_s: float = 300.0, samples: int = 3) -> None:
        self.resync_s = resync_s
        self.samples = samples
        self.offset_ms = 0.0
        self.uncertainty_ms = float("inf")
        self._synced_at: float | None = None  # time.monotonic() of the last sync
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None

    async def sync(self, client: Any) -> float:
        """Measure the offset with ``TIME`` and keep ``client`` for later re-syncs; the
        offset in ms (server minus local)."""
        self._client = client
        best: tuple[float, float] | None = None  # (round trip, offset), ms
        for _ in range(self.samples):
            t0 = time.time()
            sec, usec = _time_reply(await client.time())
            t1 = time.time()
            rtt = (t1 - t0) * 1000.0
            offset = (sec * 1000.0 + usec / 1000.0) - (t0 + t1) * 500.0
            if best is None or rtt < best[0]:
                best = (rtt, offset)
        assert best is not None
        self.uncertainty_ms, self.offset_ms = best[0] / 2.0, best[1]
        self._synced_at = time.monotonic()
        return self.offset_ms

    def now_ms(self) -> int:
        """Now, in ms since the epoch, on the server's clock."""
        if (
            self._synced_at is not None
            and time.monotonic() - self._synced_at > self.resync_s
            and self._task is None
        ):
            self._resync_later()
        return int(time.time() * 1000.0 + self.offset_ms)

    def _resync_later(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (a synchronous caller): keep the last offset
        self._task = loop.create_task(self._resync())

    async def _resync(self) -> None:
        try:
            await self.sync(self._client)
        except Exception as exc:  # the old offset stays; the next read tries again
            log.warning("could not re-measure the Redis clock offset: %s", exc)
            self._synced_at = time.monotonic()
        finally:
            self._task = None

    async def close(self) -> None:
        """Cancel a re-sync in flight (before the client closes)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
