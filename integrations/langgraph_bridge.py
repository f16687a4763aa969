"""What the LangGraph store's modules share: the one-line message of a missing extra, and
the bridge from the store's sync and async methods to the event loop its memory's
connection lives on (:class:`LoopBridge`).

LangGraph calls a store from plain code (``put``, ``get``, ``search``) and from coroutines
(``aput``, ``aget``, ``asearch``); the memory is async and its connection belongs to one
event loop. This module imports nothing of LangGraph, so it can name the extra when
LangGraph is missing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["MISSING_LANGGRAPH", "LoopBridge"]

T = TypeVar("T")

MISSING_LANGGRAPH = ("integrations.langgraph needs LangGraph: "
                     "pip install 'reactive-blackboard[langgraph]'")


class LoopBridge:
    """Runs the store's coroutines on the event loop its memory's connection lives on."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self.loop = loop

    def _bound(self) -> asyncio.AbstractEventLoop:
        if self.loop is None:
            raise RuntimeError(
                "this BlackboardStore's AgentMemory has not been used on an event loop yet: "
                "make the store inside that loop, or use BlackboardStore.connect(...) "
                "in code without one")
        return self.loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        loop = self._bound()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            coro.close()
            raise RuntimeError("a blocking BlackboardStore method was called on its own "
                               "event loop: await the a-methods (aput, aget, asearch...)")
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, loop)
        return fut.result()

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        running = asyncio.get_running_loop()
        if self.loop is None:
            self.loop = running
        if self.loop is running:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))
