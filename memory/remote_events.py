"""``RemoteMemory.on_change``: a gateway's Server-Sent Events (``/v1/events``) delivered to
a handler, as :class:`~memory.observers.ChangeHandle` delivers a feed's events.

The stream is resumed where it stopped: on a dropped connection the reader reconnects
with ``Last-Event-ID`` set to the last event it delivered (``<scope>@<stream id>``), so
no event is lost or repeated across the reconnect. A refusal (403, 404...) ends the
subscription and is kept in :attr:`RemoteChangeHandle.error`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from typing import Any

import httpx

from blackboard import BlackboardError, Event, EventType

from .observers import call_handler
from .remote_decode import raise_for
from .response_bodies import EventOut
from .subscriptions import TagMatch

__all__ = ["RemoteChangeHandle", "RemoteHandler"]

log = logging.getLogger(__name__)

RemoteHandler = Callable[[Event], Awaitable[None] | None]

#: Seconds between reconnects after a dropped stream (not after a refusal: that ends it).
RETRY_S = 0.5


class RemoteChangeHandle:
    """A running subscription to a gateway's event stream. ``await ready()`` once the
    stream is open (events written after that are delivered); ``cancel()`` or ``await
    stop()`` ends it. ``delivered``, ``handler_errors`` count handler calls; ``cursor``
    is the last delivered event's id (pass it as ``since`` to resume later)."""

    def __init__(self, http: httpx.AsyncClient, scope_pattern: str, handler: RemoteHandler,
                 *, match: TagMatch, types: Collection[EventType] | None,
                 since: str | None) -> None:
        self.scope_pattern = scope_pattern
        self.cursor = since
        self.delivered = 0
        self.handler_errors = 0
        self.error: BlackboardError | None = None
        self._http, self._handler, self._match = http, handler, match
        self._types = sorted(str(t) for t in types) if types else None
        self._ready = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def ready(self) -> None:
        """Wait until the stream is open (or the subscription was refused: then raise)."""
        await self._ready.wait()
        if self.error is not None:
            raise self.error

    def cancel(self) -> None:
        self._task.cancel()

    async def stop(self) -> None:
        self.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    @property
    def running(self) -> bool:
        return not self._task.done()

    async def _run(self) -> None:
        try:
            while True:
                try:
                    async for ev in self._stream():
                        await self._deliver(ev)
                except BlackboardError as exc:
                    self.error = exc
                    log.warning("event stream of %s refused: %s", self.scope_pattern, exc)
                    return
                except (httpx.TransportError, httpx.StreamError) as exc:
                    log.info("event stream of %s dropped (%s); resuming after %s",
                             self.scope_pattern, exc, self.cursor)
                await asyncio.sleep(RETRY_S)
        finally:
            self._ready.set()

    async def _stream(self) -> AsyncIterator[Event]:
        params: dict[str, Any] = {"scope": self.scope_pattern}
        if self._types:
            params["types"] = self._types
        headers = {"Accept": "text/event-stream"}
        if self.cursor:
            headers["Last-Event-ID"] = self.cursor
        timeout = httpx.Timeout(10.0, read=None)  # the server sends keepalives; wait on
        async with self._http.stream("GET", "/v1/events", params=params, headers=headers,
                                     timeout=timeout) as r:
            if r.status_code >= 400:
                raise_for(r.status_code, await r.aread(), r.headers)
            data: list[str] = []
            async for line in r.aiter_lines():
                if line.startswith(":"):  # the opening comment or a keepalive
                    self._ready.set()
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
                elif not line and data:
                    out = EventOut.model_validate(json.loads("\n".join(data)))
                    data = []
                    yield Event(out.id, out.scope, EventType(out.type), out.entry_id,
                                out.version, frozenset(out.tags), out.at)

    async def _deliver(self, ev: Event) -> None:
        self.cursor = f"{ev.scope}@{ev.id}"
        if not self._match.matches(ev.tags):
            return
        if await call_handler(self._handler, ev):
            self.delivered += 1
        else:
            self.handler_errors += 1
