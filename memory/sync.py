"""A blocking facade over :class:`~memory.agent.AgentMemory` for scripts and notebooks
that do not run an event loop::

    from memory.sync import SyncMemory

    with SyncMemory.connect("redis://127.0.0.1:6379/0", "a1", teams=["ops"]) as mem:
        mem.store("the build failed on step three", tags={"failure"})
        for h in mem.recall("why did the build fail"):
            print(h.explain())

Every coroutine method of ``AgentMemory`` is available under the same name and returns
its result; other attributes pass through. The connection lives on a private event loop
in a daemon thread, so it also works inside Jupyter, whose own loop is already running
(``asyncio.run`` would refuse there). Change handlers (``on_change``) run on that thread.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

from blackboard import Blackboard

from .agent import AgentMemory

__all__ = ["SyncMemory"]

T = TypeVar("T")


class _LoopThread:
    """An event loop running forever in a daemon thread; ``run`` blocks on a coroutine."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="blackboard-sync",
                                       daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


class SyncMemory:
    """``AgentMemory`` with blocking methods. Make one with :meth:`connect`; close it with
    :meth:`close` or a ``with`` block."""

    def __init__(self, runner: _LoopThread, bb: Blackboard, memory: AgentMemory) -> None:
        self._runner = runner
        self.bb = bb
        self.memory = memory
        self._closed = False

    @classmethod
    def connect(cls, url: str | None, agent_id: str, teams: Iterable[str] = (),
                **options: Any) -> SyncMemory:
        """Connect to Redis at ``url`` (default ``BLACKBOARD_REDIS_URL``) as ``agent_id``;
        ``options`` go to :class:`AgentMemory` (``retriever``, ``registry``...)."""
        runner = _LoopThread()

        async def open_() -> tuple[Blackboard, AgentMemory]:
            bb = await Blackboard.connect(url)
            try:
                return bb, AgentMemory(bb, agent_id, teams, **options)
            except BaseException:
                await bb.close()
                raise

        try:
            bb, mem = runner.run(open_())
        except BaseException:
            runner.stop()
            raise
        return cls(runner, bb, mem)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the connection lives on: an adapter called from another loop
        submits its coroutines there (``asyncio.run_coroutine_threadsafe``)."""
        return self._runner.loop

    @property
    def closed(self) -> bool:
        return self._closed

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.memory, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        @functools.wraps(attr)
        def blocking(*args: Any, **kwargs: Any) -> Any:
            if self._closed:
                raise RuntimeError("this SyncMemory is closed")
            return self._runner.run(attr(*args, **kwargs))

        return blocking

    def __repr__(self) -> str:
        return f"<SyncMemory agent={self.memory.agent_id} teams={list(self.memory.teams)}>"

    def close(self) -> None:
        """Close the memory (flushes producer writes) and the connection; idempotent."""
        if self._closed:
            return
        self._closed = True

        async def close_() -> None:
            try:
                await self.memory.aclose()
            finally:
                await self.bb.close()

        try:
            self._runner.run(close_())
        finally:
            self._runner.stop()

    def __enter__(self) -> SyncMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
