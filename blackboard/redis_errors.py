"""Redis's errors as the library's: the one place redis-py's exceptions are named.

Every module of the package talks to Redis through the client :func:`open_client
<blackboard.connection.open_client>` builds from the classes below; their commands,
pipelines (their raised error and each error reply a ``raise_on_error=False`` pipeline
returns) and WATCHed reads raise what :func:`translate` makes of redis-py's exception, with
the original as ``__cause__`` and Redis's words in ``redis_message``. Above this package no
code names a redis-py type: it catches :mod:`blackboard.errors`.

redis-py's own machinery (retries on a dropped connection, MOVED/ASK redirections, the
pipelines' bookkeeping) runs below the translation and still sees its own types. redis-py
helpers that catch its errors *over* a client (``Redis.transaction``, ``Lock``, ``Script``)
would not: the package uses none of them. redis-om catches redis-py's errors itself (e.g.
a confined user's refused INFO meaning "no hash-field expiry"): :func:`untranslated` runs
its calls with the translation off and translates what still escapes them. The other
sockets (the feed probe's, which falls back to this client on any error; the sync clients
of :mod:`blackboard.server` and the test fixtures) are not callers' paths.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from inspect import iscoroutine
from typing import Any

import redis.asyncio as aredis
from redis import exceptions as rexc
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterPipeline, RedisCluster

from . import retries
from .errors import (
    AccessDenied,
    BlackboardError,
    ConcurrentChange,
    InvalidArgument,
    LoginRefused,
    OutOfMemory,
    ScopeDamaged,
    ScriptMissing,
    ServerError,
    ServerUnavailable,
)

__all__ = [
    "ERROR_REPLIES",
    "OUT_OF_MEMORY",
    "REDIS_ERRORS",
    "TranslatingCluster",
    "TranslatingRedis",
    "translate",
    "untranslated",
]

#: An :class:`OutOfMemory`'s message (Redis's own words stay in ``redis_message``).
OUT_OF_MEMORY = ("Redis is over its maxmemory and refuses writes: nothing was written; free "
                 "memory (delete entries, or let them expire) or raise maxmemory")

#: What redis-py raises: its errors, and its cluster client's (not RedisError subclasses).
REDIS_ERRORS = (rexc.RedisError, rexc.RedisClusterException)

#: What Redis's error replies (redis-py's ResponseError) become, for the code that treats
#: any of them alike (e.g. upkeep skipping a scope whose script was refused).
ERROR_REPLIES = (ServerError, AccessDenied, OutOfMemory, ScopeDamaged, ScriptMissing)

# A command refused inside a script is a plain error reply ("ACL failure in script" on
# 7.0, "NOPERM" on newer servers), not a NoPermissionError.
_ACL_FAIL = re.compile(r"ACL failure in script|^NOPERM|no permissions to", re.IGNORECASE)

# Most specific first: the first isinstance match wins (AuthenticationError and
# BusyLoadingError are ConnectionErrors, NoPermissionError and the rest ResponseErrors).
_BY_TYPE: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...],
                      type[BlackboardError]], ...] = (
    ((rexc.AuthenticationError, rexc.AuthorizationError,
      rexc.AuthenticationWrongNumberOfArgsError), LoginRefused),
    (rexc.NoPermissionError, AccessDenied),
    ((rexc.ConnectionError, rexc.TimeoutError, rexc.ReadOnlyError, rexc.ClusterDownError,
      rexc.TryAgainError), ServerUnavailable),
    (rexc.OutOfMemoryError, OutOfMemory),  # type: ignore[attr-defined]  # (stubs lag)
    (rexc.NoScriptError, ScriptMissing),
    (rexc.WatchError, ConcurrentChange),
    (rexc.DataError, InvalidArgument),  # raised before anything was sent
)

#: How Redis words an EXECABORT: this, then the refused command's own error reply.
_EXEC_ABORT = "Transaction discarded because of: "

_translating = contextvars.ContextVar("blackboard_translating_redis_errors", default=True)


def translate(exc: BaseException) -> BlackboardError:
    """The library's error for redis-py's ``exc`` (not raised; ``raise ... from exc``).

    Its message is Redis's (or redis-py's) own text, also kept as ``redis_message``;
    an ACL refusal is an :class:`AccessDenied` with ``by_server`` set.
    """
    text = str(exc)
    if isinstance(exc, rexc.ExecAbortError) and _EXEC_ABORT in text:
        # MULTI/EXEC refused whole at EXEC for a command refused while queued: the reason
        # is that command's error reply, translated as if it had come alone
        why = translate(rexc.ResponseError(text.split(_EXEC_ABORT, 1)[1]))
        if type(why) is not ServerError:
            return why
    typ: type[BlackboardError] = ServerError
    for kinds, target in _BY_TYPE:
        if isinstance(exc, kinds):
            typ = target
            break
    else:
        if _ACL_FAIL.search(text):
            typ = AccessDenied
        elif text.startswith("WRONGTYPE"):
            typ = ScopeDamaged
        elif text.startswith("OOM "):
            typ = OutOfMemory
        elif text.startswith("NOSCRIPT"):
            typ = ScriptMissing
        elif isinstance(exc, rexc.RedisClusterException):
            typ = ServerUnavailable  # no node serves the slot, or the pipeline cannot span it
    if typ is AccessDenied:
        out: BlackboardError = AccessDenied(text, by_server=True)
    elif typ is OutOfMemory:
        out = OutOfMemory(OUT_OF_MEMORY)
    else:
        out = typ(text)
    out.redis_message = text
    return out


def closed_under_use(exc: BaseException) -> bool:
    """Whether ``exc`` is redis-py tripping over a connection another task closed while
    this one used it, not a bug of ours: its async cluster client, on CLUSTERDOWN, an
    uncovered slot or too many MOVED, closes every connection of every node, those in use
    included (``RedisCluster.aclose``), and a command between its connect and its write
    then meets ``_writer = None`` ("'NoneType' object has no attribute 'writelines'"; the
    transport's "'NoneType' object is not callable" likewise). Issue 23 found 31 of them
    after a failover; they escaped every handler written for a lost connection."""
    return isinstance(exc, (AttributeError, TypeError)) and "'NoneType' object" in str(exc)


def _connection_lost(exc: BaseException) -> BaseException:
    """What a connection closed under use raises: a lost connection, as any other."""
    text = f"the connection was closed while in use (the cluster client reset it): {exc}"
    if not _translating.get():
        return rexc.ConnectionError(text)  # a third-party caller handles redis-py's kind
    err = ServerUnavailable(text)
    err.redis_message = str(exc)
    return err


def _reply(reply: Any) -> Any:
    """A pipeline's reply with an error reply translated (not raised)."""
    if closed_under_use(reply):
        err = _connection_lost(reply)
        err.__cause__ = reply
        return err
    if isinstance(reply, REDIS_ERRORS) and _translating.get():
        err = translate(reply)
        err.__cause__ = reply
        return err
    return reply


async def _translated(aw: Awaitable[Any]) -> Any:
    try:
        return await aw
    except REDIS_ERRORS as exc:
        if not _translating.get():
            raise
        raise translate(exc) from exc
    except (AttributeError, TypeError) as exc:
        if not closed_under_use(exc):
            raise
        raise _connection_lost(exc) from exc


@asynccontextmanager
async def untranslated() -> AsyncIterator[None]:
    """Run a third-party library's calls (redis-om) on redis-py's own errors, which it
    handles itself; what still escapes is translated on the way out."""
    token = _translating.set(False)
    try:
        yield
    except REDIS_ERRORS as exc:
        raise translate(exc) from exc
    finally:
        _translating.reset(token)


class TranslatingPipeline(Pipeline):
    """A pipeline raising (and answering with) the library's errors."""

    def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        out = super().execute_command(*args, **kwargs)
        # Queued, it returns the pipeline; WATCH and the reads under it run at once.
        return _translated(out) if iscoroutine(out) else out

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        return [_reply(r) for r in await _translated(super().execute(raise_on_error))]


class TranslatingRedis(aredis.Redis):
    """The single-server client: every command and pipeline raises the library's errors."""

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        return await _translated(super().execute_command(*args, **options))

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Any:
        return TranslatingPipeline(self.connection_pool, self.response_callbacks,
                                   transaction, shard_hint)


class TranslatingClusterPipeline(ClusterPipeline):
    """A cluster pipeline raising (and answering with) the library's errors."""

    async def initialize(self) -> TranslatingClusterPipeline:
        # Opening one (``async with``, ``await``) initializes a cluster client that reset
        # itself (on CLUSTERDOWN, a lost node...): its CLUSTER SLOTS and COMMAND go to the
        # nodes it knew, which may be down, outside the client's retries.
        await _translated(super().initialize())
        return self

    def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        out = super().execute_command(*args, **kwargs)
        return _translated(out) if iscoroutine(out) else out

    async def execute(self, raise_on_error: bool = True,
                      allow_redirections: bool = True) -> list[Any]:
        replies = await _translated(super().execute(raise_on_error, allow_redirections))
        return [_reply(r) for r in replies]

    async def watch(self, *names: Any) -> Any:
        return await _translated(super().watch(*names))  # type: ignore[misc]

    async def unwatch(self) -> Any:
        return await _translated(super().unwatch())  # type: ignore[misc]


class TranslatingCluster(RedisCluster):
    """The cluster client: every command and pipeline raises the library's errors."""

    async def initialize(self, *args: Any, **kwargs: Any) -> Any:
        # Past the first time, the client reads the layout again because a command failed
        # (a lost connection, CLUSTERDOWN, a moved slot) and is about to run it again; a
        # command whose lost reply a retry would lose raises instead (blackboard.retries).
        again = self._initialized_once
        self._initialized_once = True
        out = await super().initialize(*args, **kwargs)
        if again:
            retries.failed()
        return out

    _initialized_once = False

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        return await _translated(super().execute_command(*args, **kwargs))

    def pipeline(self, transaction: Any | None = None, shard_hint: Any | None = None) -> Any:
        if shard_hint:
            raise InvalidArgument("shard_hint is not supported in cluster mode")
        return TranslatingClusterPipeline(self, transaction)  # type: ignore[call-arg]
