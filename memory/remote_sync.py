"""The blocking twin of :class:`~memory.remote.RemoteMemory`, for scripts and notebooks::

    with RemoteMemory("http://gateway:8080", token).sync() as mem:
        mem.store("the build failed on step three", tags={"failure"})
        print([h.entry.value for h in mem.recall("why did the build fail")])

Every coroutine method of ``RemoteMemory`` is here under the same name and returns its
result, run on a private event loop in a daemon thread (as :class:`memory.SyncMemory`
does, so it works inside Jupyter too); change handlers run on that thread.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Collection, Iterable
from typing import Any

from blackboard import EventType

from .remote import RemoteMemory
from .remote_events import RemoteChangeHandle, RemoteHandler
from .subscriptions import TagMatch
from .sync import _LoopThread

__all__ = ["SyncChangeHandle", "SyncRemoteMemory"]


class SyncChangeHandle:
    """A :class:`RemoteChangeHandle` driven from another thread: ``cancel``/``stop`` run
    on the client's loop (a task may only be cancelled there); the counters and
    ``cursor`` read through."""

    def __init__(self, runner: _LoopThread, handle: RemoteChangeHandle) -> None:
        self._runner, self.handle = runner, handle

    def __getattr__(self, name: str) -> Any:
        return getattr(self.handle, name)

    def cancel(self) -> None:
        self._runner.loop.call_soon_threadsafe(self.handle.cancel)

    def stop(self) -> None:
        """Cancel and wait until the stream is closed."""
        self._runner.run(self.handle.stop())


class SyncRemoteMemory:
    """``RemoteMemory`` with blocking methods; close with :meth:`close` or ``with``."""

    def __init__(self, url: str, token: str | None = None, **options: Any) -> None:
        self._runner = _LoopThread()

        async def open_() -> RemoteMemory:
            return RemoteMemory(url, token, **options)

        self.remote = self._runner.run(open_())
        self._closed = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.remote, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        @functools.wraps(attr)
        def blocking(*args: Any, **kwargs: Any) -> Any:
            if self._closed:
                raise RuntimeError("this SyncRemoteMemory is closed")
            return self._runner.run(attr(*args, **kwargs))

        return blocking

    def on_change(self, scope_pattern: str, handler: RemoteHandler, *,
                  tags: Iterable[str] | TagMatch | None = None,
                  types: Collection[EventType] | None = None,
                  since: str | None = None) -> SyncChangeHandle:
        """As :meth:`RemoteMemory.on_change`, returning once the stream is open; the
        handler runs on the client's loop thread."""

        async def start() -> RemoteChangeHandle:
            h = self.remote.on_change(scope_pattern, handler, tags=tags, types=types,
                                      since=since)
            await h.ready()
            return h

        return SyncChangeHandle(self._runner, self._runner.run(start()))

    def __repr__(self) -> str:
        return f"<SyncRemoteMemory {self.remote.url}>"

    def close(self) -> None:
        """Stop the change handlers and close the connection pool; idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._runner.run(self.remote.aclose())
        finally:
            self._runner.stop()

    def __enter__(self) -> SyncRemoteMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
