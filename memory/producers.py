"""Producers: memory observes the agent. ``@mem.observe(...)`` wraps a callable and stores
what it did after each call, without changing its result or exception.

Where the write happens:
- async callables: awaited inline right after the call (one write added to the call);
- sync callables called inside the running event loop: scheduled as a task (the call
  returns at once; ``await mem.flush()`` waits for outstanding writes);
- sync callables called with no running loop (plain threads, scripts): written
  synchronously through a background thread that runs its own event loop, on a twin of
  the memory opened there (its own Blackboard connection: the agent's async client is
  bound to its loop and cannot be used from here); the call blocks for that one write.
Every path ends in the same call, the memory's ``store`` (access check, scope
registration, ``Scope.write``). A producer failure (extractor or write) is logged and
counted, never raised.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .levels import MemoryLevel

if TYPE_CHECKING:
    from blackboard import Entry

    from .access import AccessPolicy

__all__ = [
    "CallRecord", "MemoryWriter", "Observation", "Producers", "SyncBridge",
    "default_extractor", "json_safe",
]

# Producer failures were always logged as ``memory.agent``; keep that name so existing
# logging configuration and filters still see them.
log = logging.getLogger("memory.agent")

T = TypeVar("T")

MAX_STR = 1000  # characters kept of any string or repr
MAX_ITEMS = 50  # items kept of any list or dict
MAX_DEPTH = 6


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One observed call. ``duration_ms`` is wall time; ``error`` is the raised exception."""

    name: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    result: Any = None
    error: BaseException | None = None
    duration_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True, slots=True)
class Observation:
    """What an extractor wants stored: the data plus extra tags and metadata."""

    data: Any
    tags: frozenset[str] = frozenset()
    metadata: Mapping[str, Any] = field(default_factory=dict)


def _trunc(s: str) -> str:
    return s if len(s) <= MAX_STR else s[: MAX_STR - 1] + "…"


def json_safe(value: Any, depth: int = 0) -> Any:
    """A JSON-serialisable, bounded copy: repr() for anything else, long strings and
    collections truncated, nesting cut at ``MAX_DEPTH``."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    if isinstance(value, str):
        return _trunc(value)
    if depth >= MAX_DEPTH:
        return _trunc(repr(value))
    if isinstance(value, Mapping):
        items = list(value.items())[:MAX_ITEMS]
        return {_trunc(str(k)): json_safe(v, depth + 1) for k, v in items}
    if isinstance(value, list | tuple | set | frozenset):
        seq = list(value)[:MAX_ITEMS]
        return [json_safe(v, depth + 1) for v in seq]
    return _trunc(repr(value))


def default_extractor(call: CallRecord) -> Observation:
    """Arguments and result (or the error) of the call, JSON-safe."""
    data: dict[str, Any] = {
        "call": call.name, "args": json_safe(list(call.args)), "kwargs": json_safe(call.kwargs)
    }
    if call.error is None:
        data["result"] = json_safe(call.result)
    else:
        data["error"] = _trunc(repr(call.error))
    return Observation(data)


class SyncBridge:
    """A daemon thread running an event loop, to run coroutines from code with no loop.

    ``factory`` opens the resources the coroutines need on that loop (a Blackboard
    connection); it is called once, on first use.
    """

    def __init__(
        self,
        opener: Callable[[], Coroutine[Any, Any, Any]],
        closer: Callable[[Any], Coroutine[Any, Any, None]],
    ) -> None:
        self._opener, self._closer = opener, closer
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._state: Any = None
        self._lock = threading.Lock()

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                t = threading.Thread(target=loop.run_forever, name="memory-producer",
                                     daemon=True)
                t.start()
                self._loop, self._thread = loop, t
                self._state = asyncio.run_coroutine_threadsafe(self._opener(), loop).result(30)
            return self._loop

    def run(self, fn: Callable[[Any], Awaitable[T]], timeout: float = 30.0) -> T:
        """Run ``fn(state)`` on the bridge loop and wait for its result (seconds)."""
        loop = self._start()
        fut: Future[T] = asyncio.run_coroutine_threadsafe(self._call(fn), loop)
        return fut.result(timeout)

    async def _call(self, fn: Callable[[Any], Awaitable[T]]) -> T:
        return await fn(self._state)

    def close(self) -> None:
        with self._lock:
            loop, t, state = self._loop, self._thread, self._state
            self._loop = self._thread = self._state = None
        if loop is None or t is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._closer(state), loop).result(10)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            t.join(10)
            loop.close()


def now_ms() -> float:
    return time.perf_counter() * 1000


@dataclass(frozen=True, slots=True)
class ProducerSpec:
    """How one observed callable is recorded."""

    level: str | None  # None: a team's root scope
    tags: frozenset[str]
    extractor: Callable[[CallRecord], Any]
    team: str | None = None
    importance: float = 0.5


def action_tag(name: str) -> str:
    """``action_type:<name>`` with characters a tag cannot hold replaced by ``_``."""
    clean = "".join(c if c.isprintable() and c not in " {}*?[]\\" else "_" for c in name)
    return f"action_type:{clean[:100]}"


def wrap(host: Producers, fn: Callable[..., Any], spec: ProducerSpec) -> Callable[..., Any]:
    """``fn`` wrapped so each call is recorded through ``host`` (see module docstring)."""
    name = getattr(fn, "__name__", None) or type(fn).__name__

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def awrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = now_ms()
            try:
                result = await fn(*args, **kwargs)
            except BaseException as exc:
                if not isinstance(exc, asyncio.CancelledError):
                    call = CallRecord(name, args, kwargs, None, exc, now_ms() - t0)
                    await host.record(call, spec)
                raise
            await host.record(CallRecord(name, args, kwargs, result, None, now_ms() - t0), spec)
            return result

        return awrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = now_ms()
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            _emit(host, CallRecord(name, args, kwargs, None, exc, now_ms() - t0), spec)
            raise
        _emit(host, CallRecord(name, args, kwargs, result, None, now_ms() - t0), spec)
        return result

    return wrapper


def _emit(host: Producers, call: CallRecord, spec: ProducerSpec) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        host.record_blocking(call, spec)
    else:
        host.spawn(host.record(call, spec))


class MemoryWriter(Protocol):
    """What producers write through (:class:`~memory.agent.AgentMemory` is one)."""

    access: AccessPolicy

    def scope_for(self, level: MemoryLevel | str | None = ..., team: str | None = None) -> str:
        ...

    async def store(
        self, data: Any, level: MemoryLevel | str | None = ..., *,
        tags: Iterable[str] | None = None, metadata: Mapping[str, Any] | None = None,
        importance: float = 0.5, team: str | None = None,
    ) -> Entry: ...

    async def aclose(self) -> None: ...


class Producers:
    """The producers of one memory: ``observe`` wraps callables, each call is written with
    ``memory.store``. ``twin`` opens, on the bridge thread's loop, a memory writing to the
    same scopes over its own connection (for sync callables called with no loop); it is
    opened on first need and closed with :meth:`aclose`. ``errors``: failed writes."""

    def __init__(self, memory: MemoryWriter,
                 twin: Callable[[], Coroutine[Any, Any, MemoryWriter]]) -> None:
        self.memory = memory
        self.errors = 0  # failed producer writes (logged, never raised)
        self._twin = twin
        self._tasks: set[asyncio.Task[None]] = set()
        self._bridge: SyncBridge | None = None

    def observe(
        self, fn: Callable[..., Any] | None = None, *,
        level: MemoryLevel | str | None = MemoryLevel.WORKING, tags: Iterable[str] = (),
        extractor: Callable[[CallRecord], Any] | None = None, team: str | None = None,
        importance: float = 0.5,
    ) -> Any:
        """Decorator recording each call of a sync or async callable (see the module
        docstring). Usable bare (``@observe``) or with arguments."""
        self.memory.access.check_write(self.memory.scope_for(level, team))
        spec = ProducerSpec(None if level is None else MemoryLevel(level).value,
                            frozenset(tags), extractor or default_extractor, team, importance)

        def deco(f: Callable[..., Any]) -> Callable[..., Any]:
            return wrap(self, f, spec)

        return deco(fn) if fn is not None else deco

    async def flush(self) -> None:
        """Wait for producer writes scheduled from sync callables."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def aclose(self) -> None:
        """Flush scheduled writes, then close the twin and stop the bridge thread."""
        await self.flush()
        if self._bridge is not None:
            bridge, self._bridge = self._bridge, None
            await asyncio.to_thread(bridge.close)

    async def record(self, call: CallRecord, spec: ProducerSpec) -> None:
        try:
            await _write(self.memory, call, spec)
        except Exception:
            self._failed(call)

    def record_blocking(self, call: CallRecord, spec: ProducerSpec) -> None:
        try:
            if self._bridge is None:
                self._bridge = SyncBridge(self._twin, _close_twin)

            async def write(twin: MemoryWriter) -> None:
                await _write(twin, call, spec)

            self._bridge.run(write)
        except Exception:
            self._failed(call)

    def spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _failed(self, call: CallRecord) -> None:
        self.errors += 1
        log.exception("producer for %s failed to record a call", call.name)


async def _write(memory: MemoryWriter, call: CallRecord, spec: ProducerSpec) -> None:
    """Store what ``spec`` extracts from ``call`` (nothing if the extractor says None)."""
    got = spec.extractor(call)
    if got is None:
        return
    obs = got if isinstance(got, Observation) else Observation(got)
    tags = sorted({action_tag(call.name), "success" if call.ok else "failure", *spec.tags,
                   *obs.tags})
    meta = {"producer": call.name, "duration_ms": round(call.duration_ms, 3), **obs.metadata}
    await memory.store(obs.data, spec.level, tags=tags, metadata=meta,
                       importance=spec.importance, team=spec.team)


async def _close_twin(twin: MemoryWriter) -> None:
    await twin.aclose()
