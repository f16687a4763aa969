"""The agent observes memory: handlers run for new events of the scopes it may read.

One reader task per partition: the feeds of one partition share a hash slot, so a single
``XREAD`` can block on all of them (also on Redis Cluster), and the number of blocked
connections stays bounded by the partitions touched, not the scopes.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any

from blackboard import Blackboard, Event, EventType
from blackboard.backoff import Backoff
from blackboard.errors import BlackboardError, LoginRefused, ServerUnavailable

from .subscriptions import TagMatch

__all__ = ["ChangeHandle", "Handler", "call_handler"]

log = logging.getLogger(__name__)


async def call_handler(handler: Callable[[Event], Any], ev: Event) -> bool:
    """Run an ``on_change`` handler (sync or async) on ``ev``; False, logged, when it
    raised: a failing handler never stops the stream it reads (local or remote)."""
    try:
        out: Any = handler(ev)
        if inspect.isawaitable(out):
            await out
        return True
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("on_change handler failed on event %s of %s", ev.id, ev.scope)
        return False

Handler = Callable[[Event], Awaitable[None] | None]


def lasting(exc: BaseException) -> bool:
    """A read failure no retry mends: a refused login (a revoked token, a rotated
    password), an ACL refusal, a feed damaged by raw commands, an invalid position.
    A dropped connection or a timeout is not: the reader retries it, backing off."""
    if isinstance(exc, BlackboardError):  # (AccessDenied is a PermissionError: an OSError)
        return not isinstance(exc, ServerUnavailable) or isinstance(exc, LoginRefused)
    return not isinstance(exc, OSError)


class ChangeHandle:
    """A running subscription. ``await handle.ready()`` once its start positions are
    fixed (events written after that are delivered); ``cancel()`` or ``await stop()``
    ends it. ``delivered`` and ``handler_errors`` count handler calls. A read failure
    no retry mends (:func:`lasting`) ends the subscription: it is logged once, kept in
    ``error``, and ``failed`` (a future) is set with it."""

    def __init__(
        self,
        bb: Blackboard,
        scopes: Sequence[str],
        handler: Handler,
        *,
        match: TagMatch,
        types: Collection[EventType] | None,
        since: str | None,
        block_ms: int,
    ) -> None:
        self.scopes = tuple(scopes)
        self.delivered = 0
        self.handler_errors = 0
        self._bb, self._handler, self._match = bb, handler, match
        self._types = frozenset(types) if types else None
        self._since, self._block_ms = since, block_ms
        groups: dict[int, list[str]] = defaultdict(list)
        for s in self.scopes:
            groups[bb.scope(s).partition].append(s)
        self._ready = asyncio.Event()
        self._stopped = False
        self.error: BaseException | None = None
        self.failed: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()
        self._pending_ready = len(groups)
        self._tasks = [asyncio.get_running_loop().create_task(self._read(p, g))
                       for p, g in groups.items()]

    async def ready(self) -> None:
        """Wait until every reader has fixed its start position (one round trip)."""
        await self._ready.wait()

    def cancel(self) -> None:
        self._stopped = True
        for t in self._tasks:
            t.cancel()

    async def stop(self) -> None:
        self.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    @property
    def running(self) -> bool:
        return any(not t.done() for t in self._tasks)

    async def _read(self, partition: int, scopes: list[str]) -> None:
        try:
            if self._since is not None:
                pos = dict.fromkeys(scopes, self._since)
            else:
                pos = await self._bb.reads.newest_event_ids(scopes)
        finally:
            self._pending_ready -= 1
            if self._pending_ready <= 0:
                self._ready.set()
        # The flag as well as cancel(): a cancel racing the client's read timeout can
        # surface as a TimeoutError that the client retries, losing the cancellation.
        backoff = Backoff()
        while not self._stopped:
            try:
                got = await self._bb.reads.events_or_pause(
                    pos, partition, count=100, block_ms=self._block_ms,
                    stopped=lambda: self._stopped, reader="on_change reader",
                    backoff=backoff, fatal=lasting)
            except Exception as exc:
                self._fail(exc, partition)
                return
            for scope, ev in got:
                pos[scope] = ev.id
                await self._deliver(ev)

    def _fail(self, exc: BaseException, partition: int) -> None:
        self._stopped = True
        if self.error is None:  # one line per subscription, whichever reader failed
            log.warning("on_change reader of partition %d ended: %s: %s", partition,
                        type(exc).__name__, " ".join(str(exc).split())[:300])
            self.error = exc
            self.failed.set_result(exc)
        for t in self._tasks:  # the other partitions' readers end with it
            if t is not asyncio.current_task():
                t.cancel()

    async def _deliver(self, ev: Event) -> None:
        if self._types is not None and ev.type not in self._types:
            return
        if not self._match.matches(ev.tags):
            return
        if await call_handler(self._handler, ev):
            self.delivered += 1
        else:
            self.handler_errors += 1
