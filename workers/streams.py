"""Iterating a consume stream until a stop event, leaving the batch in hand finished."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from blackboard import Batch

__all__ = ["until_stopped"]


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
