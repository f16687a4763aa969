"""``Recorder``: the producer side of :class:`~memory.agent.AgentMemory`. It implements
``@mem.observe`` and turns each observed call into a write (see :mod:`memory.producers`
for where that write happens)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from blackboard import Blackboard, Entry

from .levels import MemoryLevel
from .producers import (
    CallRecord,
    Observation,
    ProducerHost,
    ProducerSpec,
    SyncBridge,
    action_tag,
    default_extractor,
    wrap,
)
from .registry import Registry

if TYPE_CHECKING:
    from .access import AccessPolicy

__all__ = ["Recorder"]

# Producer failures were always logged as ``memory.agent``; keep that name so existing
# logging configuration and filters still see them.
log = logging.getLogger("memory.agent")


class Recorder(ProducerHost):
    """Mixin of :class:`~memory.agent.AgentMemory` holding its producer state: the count of
    failed writes, the writes scheduled from sync callables, and the bridge used when no
    loop runs. The host supplies ``bb``, ``access``, ``scope_for`` and ``store``."""

    bb: Blackboard
    access: AccessPolicy

    # Declared for the type checker only: at runtime the host's methods are the ones found.
    if TYPE_CHECKING:

        def scope_for(
            self, level: MemoryLevel | str | None = MemoryLevel.WORKING, team: str | None = None
        ) -> str: ...

        async def store(
            self,
            data: Any,
            level: MemoryLevel | str | None = MemoryLevel.WORKING,
            *,
            tags: Iterable[str] | None = None,
            metadata: Mapping[str, Any] | None = None,
            importance: float = 0.5,
            team: str | None = None,
        ) -> Entry: ...

    def __init__(self) -> None:
        self.producer_errors = 0  # failed producer writes (logged, never raised)
        self._tasks: set[asyncio.Task[None]] = set()
        self._bridge: SyncBridge | None = None

    async def flush(self) -> None:
        """Wait for producer writes scheduled from sync callables."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _close_producers(self) -> None:
        """Flush scheduled writes, then stop the bridge thread (if one was started)."""
        await self.flush()
        if self._bridge is not None:
            bridge, self._bridge = self._bridge, None
            await asyncio.to_thread(bridge.close)

    def observe(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        level: MemoryLevel | str | None = MemoryLevel.WORKING,
        tags: Iterable[str] = (),
        extractor: Callable[[CallRecord], Any] | None = None,
        team: str | None = None,
        importance: float = 0.5,
    ) -> Any:
        """Decorator recording each call of a sync or async callable (see
        :mod:`memory.producers`). Usable bare (``@mem.observe``) or with arguments."""
        self.access.check_write(self.scope_for(level, team))
        spec = ProducerSpec(
            None if level is None else MemoryLevel(level).value,
            frozenset(tags),
            extractor or default_extractor,
            team,
            importance,
        )

        def deco(f: Callable[..., Any]) -> Callable[..., Any]:
            return wrap(self, f, spec)

        return deco(fn) if fn is not None else deco

    def _observation(
        self, call: CallRecord, spec: ProducerSpec
    ) -> tuple[Observation, list[str]] | None:
        got = spec.extractor(call)
        if got is None:
            return None  # the extractor chose not to record this call
        obs = got if isinstance(got, Observation) else Observation(got)
        status = "success" if call.ok else "failure"
        tags = sorted({action_tag(call.name), status, *spec.tags, *obs.tags})
        return obs, tags

    def _record_of(
        self, call: CallRecord, spec: ProducerSpec
    ) -> tuple[Observation, list[str], dict[str, Any]] | None:
        """What to store for an observed call: data, tags and metadata (None: nothing)."""
        made = self._observation(call, spec)
        if made is None:
            return None
        obs, tags = made
        meta = {"producer": call.name, "duration_ms": round(call.duration_ms, 3), **obs.metadata}
        return obs, tags, meta

    async def record(self, call: CallRecord, spec: ProducerSpec) -> None:
        try:
            made = self._record_of(call, spec)
            if made is None:
                return
            obs, tags, meta = made
            await self.store(
                obs.data,
                spec.level,
                tags=tags,
                metadata=meta,
                importance=spec.importance,
                team=spec.team,
            )
        except Exception:
            self.producer_errors += 1
            log.exception("producer for %s failed to record a call", call.name)

    def spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def record_blocking(self, call: CallRecord, spec: ProducerSpec) -> None:
        try:
            made = self._record_of(call, spec)
            if made is None:
                return
            obs, tags, meta = made
            sid = self.access.check_write(self.scope_for(spec.level, spec.team))
            if self._bridge is None:
                self._bridge = SyncBridge(self._open_bridge, _close_bridge)

            async def write(state: tuple[Blackboard, Registry]) -> None:
                bb, reg = state
                await reg.ensure_scope(sid)
                await bb.scope(sid).write(
                    obs.data, tags=tags, metadata=meta, importance=spec.importance
                )

            self._bridge.run(write)
        except Exception:
            self.producer_errors += 1
            log.exception("producer for %s failed to record a call", call.name)

    async def _open_bridge(self) -> tuple[Blackboard, Registry]:
        kw = self.bb.client.connection_pool.connection_kwargs if not self.bb.cluster else {}
        bb = await Blackboard.connect(
            self.bb.settings.redis_url,
            settings=self.bb.settings,
            username=kw.get("username"),
            password=kw.get("password"),
        )
        return bb, Registry(bb)


async def _close_bridge(state: tuple[Blackboard, Registry]) -> None:
    bb, reg = state
    await reg.aclose()
    await bb.close()
