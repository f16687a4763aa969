"""Opening the Redis client a :class:`~blackboard.board.Blackboard` runs on: single server
or cluster (detected), the pool, retries, and the warnings about an unsafe server."""

from __future__ import annotations

import warnings
from collections.abc import Generator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as aredis
from redis import exceptions as rexc
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from . import retries
from .errors import AccessDenied, LoginRefused, ServerError, ServerUnavailable
from .packing import with_fast_packing
from .redact import mask_url
from .redis_errors import TranslatingCluster, TranslatingRedis
from .settings import ClientSettings

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["Connect", "open_client", "warn_on_unsafe_server", "without_credentials"]


class AbandoningRetry(Retry):
    """redis-py's retry, but for a command whose reply may carry what a retry would lose
    (:mod:`blackboard.retries`): after the connection is closed, that one raises."""

    async def call_with_retry(self, do: Any, fail: Any, is_retryable: Any = None,
                              with_failure_count: bool = False) -> Any:
        async def closed_then_maybe_abandoned(error: Exception, *count: int) -> Any:
            out = await fail(error, *count)
            retries.failed(error)
            return out

        # types-redis 4.6's stub predates the last two parameters (redis 8.1 has them)
        return await super().call_with_retry(  # type: ignore[call-arg,unused-ignore]
            do, closed_then_maybe_abandoned, is_retryable, with_failure_count)


def _client_kwargs(s: ClientSettings) -> dict[str, Any]:
    return {
        "decode_responses": False,
        "socket_timeout": s.socket_timeout,
        "socket_connect_timeout": s.connect_timeout,
        "retry": AbandoningRetry(ExponentialBackoff(cap=2.0, base=0.05), s.retries),
        "retry_on_error": [rexc.ConnectionError, rexc.TimeoutError],
    }


async def _is_cluster(probe: Any) -> bool:
    """Whether the server runs in cluster mode. INFO for the service; a confined agent may
    not run INFO but may run CLUSTER SLOTS (cluster clients need it), which a server without
    cluster support refuses with an error that says so."""
    try:
        info = await probe.info("cluster")
        return bool(info.get("cluster_enabled"))
    except AccessDenied:
        pass
    try:
        await probe.execute_command("CLUSTER", "SLOTS")
    except AccessDenied:
        return False
    except ServerError as exc:
        if "cluster support disabled" in str(exc).lower():
            return False
        raise
    return True


class Connect:
    """Awaitable that also works as ``async with`` (closing the blackboard on exit)."""

    def __init__(self, coro_factory: Any) -> None:
        self._factory = coro_factory
        self._bb: Blackboard | None = None

    def __await__(self) -> Generator[Any, None, Blackboard]:
        return self._factory().__await__()  # type: ignore[no-any-return,unused-ignore]

    async def __aenter__(self) -> Blackboard:
        self._bb = await self._factory()
        return self._bb

    async def __aexit__(self, *exc: object) -> None:
        if self._bb is not None:
            await self._bb.close()


async def open_client(
    url: str, s: ClientSettings, auth: dict[str, Any]
) -> tuple[Any, bool]:
    """The client for ``url`` logged in with ``auth``, and whether it is a cluster
    client (probed when ``s.cluster`` is None)."""
    kw = _client_kwargs(s) | auth
    is_cluster = s.cluster
    client: Any
    if is_cluster is None:
        probe: Any = TranslatingRedis.from_url(url, **kw)
        try:
            is_cluster = await _is_cluster(probe)
        except LoginRefused as exc:
            err = LoginRefused(f"Redis at {mask_url(url)} refused the login: {exc}")
            err.redis_message = exc.redis_message
            raise err from exc
        except (ServerUnavailable, OSError) as exc:
            raise ServerUnavailable(f"cannot reach Redis at {mask_url(url)}: {exc}") from exc
        finally:
            await probe.aclose()
    if is_cluster:
        client = TranslatingCluster.from_url(url, **kw)
    else:
        # A blocking pool: a burst beyond max_connections waits for a connection
        # (pool_timeout) instead of failing with MaxConnectionsError.
        cp: Any = aredis.BlockingConnectionPool.from_url(
            url,
            **kw,
            max_connections=s.max_connections,
            timeout=s.pool_timeout,
            health_check_interval=s.health_check_interval,
        )
        cp.connection_class = with_fast_packing(cp.connection_class)
        client = TranslatingRedis.from_pool(cp)  # type: ignore[attr-defined]
    return client, bool(is_cluster)


async def warn_on_unsafe_server(client: Any) -> None:
    """Warn (once per connect) when Redis could lose acknowledged writes or evict keys."""
    try:
        cfg = await client.config_get("appendonly")
        pol = await client.config_get("maxmemory-policy")
    except (AccessDenied, ServerError):
        return  # confined users cannot read the config; the operator's check covers it
    flat = {**_decode_map(cfg), **_decode_map(pol)}
    if flat.get("appendonly", "yes") != "yes":
        warnings.warn(
            "Redis runs without AOF persistence (appendonly no): acknowledged writes can "
            "be lost on a crash", RuntimeWarning, stacklevel=3,
        )
    policy = flat.get("maxmemory-policy", "noeviction")
    if policy != "noeviction":
        warnings.warn(
            f"Redis maxmemory-policy is {policy!r}: Redis may evict entries and index keys "
            "behind the blackboard's back; use noeviction", RuntimeWarning, stacklevel=3,
        )


def without_credentials(url: str) -> str:
    """``url`` without its ``user:password@`` and ``?username=``/``?password=``."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    query = "&".join(q for q in parts.query.split("&")
                     if q and q.split("=", 1)[0].lower() not in ("username", "password"))
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def _decode_map(m: Any) -> dict[str, str]:
    return {
        (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
        for k, v in dict(m).items()
    }
