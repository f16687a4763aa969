"""What the LangChain adapters share: the one-line message of a missing extra, and the
bridge from LangChain's sync and async calls to the memory's event loop.

LangChain calls a retriever or a vector store from plain code (``invoke``,
``similarity_search``) and from coroutines (``ainvoke``, ``asimilarity_search``); the
memory is async and its connection belongs to one event loop. Given a
:class:`~memory.sync.SyncMemory` (its loop runs in a thread of its own) both kinds of call
work from anywhere; given an :class:`~memory.AgentMemory` the async calls are awaited on the
caller's loop (which must be the memory's) and a sync call says what to use instead.
This module imports nothing of LangChain, so it can name the extra when LangChain is
missing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from blackboard import InvalidArgument
from memory import AgentMemory, SyncMemory

__all__ = ["MISSING_LANGCHAIN", "MemoryBridge", "check_k", "missing_langchain"]

T = TypeVar("T")

MISSING_LANGCHAIN = (
    "the LangChain integration needs langchain-core: pip install 'reactive-blackboard[langchain]'"
)


def missing_langchain(exc: ImportError) -> ImportError:
    """The error to raise for ``exc`` met importing LangChain: the one-line install hint
    when langchain-core itself is missing, ``exc`` unchanged for any other failure (a
    broken install must not be reported as a missing one)."""
    if (exc.name or "").split(".")[0] == "langchain_core":
        return ImportError(MISSING_LANGCHAIN, name=exc.name)
    return exc


def check_k(k: object, what: str = "k") -> int:
    """A result count: a positive int (a bool is not one)."""
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise InvalidArgument(f"{what} must be a positive integer (got {k!r:.40})")
    return k


class MemoryBridge:
    """Runs the coroutines of an adapter on the memory's loop, from sync or async code."""

    def __init__(self, memory: AgentMemory | SyncMemory) -> None:
        if isinstance(memory, SyncMemory):
            self.memory: AgentMemory = memory.memory
            self._sync: SyncMemory | None = memory
        elif isinstance(memory, AgentMemory):
            self.memory, self._sync = memory, None
        else:
            raise InvalidArgument(
                f"memory must be an AgentMemory or a SyncMemory, not {type(memory).__name__}"
            )

    @property
    def agent_id(self) -> str:
        return self.memory.agent_id

    def run(self, make: Callable[[AgentMemory], Coroutine[Any, Any, T]]) -> T:
        """``make(memory)`` run to its result from sync code."""
        sm = self._sync
        if sm is None:
            raise RuntimeError(
                "a blocking call needs a SyncMemory (memory.sync.SyncMemory.connect(...)); "
                "with an AgentMemory use the async method (ainvoke, asimilarity_search, ...)"
            )
        if sm.closed:
            raise RuntimeError("this SyncMemory is closed")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is sm.loop:  # blocking on our own loop would never return
            raise RuntimeError("a blocking call from the SyncMemory's own loop; await the "
                               "async method instead")
        return asyncio.run_coroutine_threadsafe(make(self.memory), sm.loop).result()

    async def arun(self, make: Callable[[AgentMemory], Coroutine[Any, Any, T]]) -> T:
        """``make(memory)`` awaited: on the caller's loop for an AgentMemory, on the
        SyncMemory's loop (without blocking the caller's) otherwise."""
        sm = self._sync
        if sm is None or asyncio.get_running_loop() is sm.loop:
            return await make(self.memory)
        if sm.closed:
            raise RuntimeError("this SyncMemory is closed")
        # cancelling the caller cancels the wrapped future, which cancels the task there
        return await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(make(self.memory), sm.loop))
