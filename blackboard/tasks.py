"""Stopping background tasks for sure.

``task.cancel()`` followed by ``await task`` can hang: a cancellation that lands while a
client call is in flight can be swallowed (a connection-pool wait racing its own timeout
turns it into a TimeoutError, which a retrying loop catches), and the loop then sleeps on
forever. A worker told to stop was seen waiting on such a loop for minutes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable

__all__ = ["cancel_and_wait"]


async def cancel_and_wait(tasks: Iterable[asyncio.Task[None]], every_s: float = 1.0) -> None:
    """Cancel ``tasks`` and wait until every one is done, cancelling again every ``every_s``
    while one is still running (so a swallowed cancellation cannot keep it alive). Their
    results and errors are consumed: a stopping caller has nothing left to do with them."""
    tasks = list(tasks)
    pending = {t for t in tasks if not t.done()}
    while pending:
        for t in pending:
            t.cancel()
        _, pending = await asyncio.wait(pending, timeout=every_s)
    for t in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            t.result()
