"""The blackboard: a connection to Redis (single or cluster) and the operations across scopes."""

from __future__ import annotations

import asyncio
import functools
import logging
import warnings
from collections.abc import AsyncIterator, Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as aredis
from redis import exceptions as rexc
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

from . import keys as K
from .clock import ServerClock
from .consumer import (
    Batch,
    ConsumeCounters,
    ConsumeOptions,
    PartitionSource,
    consume,
    ensure_group,
)
from .errors import ConfigMismatch, InvalidArgument, ServerUnavailable
from .keys import PartitionKeys, ScopeKeys
from .packing import with_fast_packing
from .redact import mask_url
from .relay import Relays
from .scope import Scope
from .scripts import SCRIPTS, load_script, run_script
from .settings import ClientSettings
from .validation import validate_scope

__all__ = ["Blackboard", "SweepReport", "TrimReport"]

log = logging.getLogger(__name__)
SCHEMA_VERSION = "1"


@dataclass(frozen=True, slots=True)
class SweepReport:
    """What a TTL sweep removed (or, in a dry run, would remove): scope -> count."""

    expired: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False

    @property
    def total(self) -> int:
        return sum(self.expired.values())


@dataclass(frozen=True, slots=True)
class TrimReport:
    """Per partition: events trimmed from the bus (or trimmable, in a dry run)."""

    trimmed: dict[int, int] = field(default_factory=dict)
    dry_run: bool = False
    #: per partition: retired entries deleted because every edge has consolidated them
    reaped: dict[int, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.trimmed.values())


def _client_kwargs(s: ClientSettings) -> dict[str, Any]:
    return {
        "decode_responses": False,
        "socket_timeout": s.socket_timeout,
        "socket_connect_timeout": s.connect_timeout,
        "retry": Retry(ExponentialBackoff(cap=2.0, base=0.05), s.retries),
        "retry_on_error": [rexc.ConnectionError, rexc.TimeoutError],
    }


async def _is_cluster(probe: Any) -> bool:
    """Whether the server runs in cluster mode. INFO for the service; a confined agent may
    not run INFO but may run CLUSTER SLOTS (cluster clients need it), which a server without
    cluster support refuses with an error that says so."""
    try:
        info = await probe.info("cluster")
        return bool(info.get("cluster_enabled"))
    except rexc.NoPermissionError:
        pass
    try:
        await probe.execute_command("CLUSTER", "SLOTS")
    except rexc.NoPermissionError:
        return False
    except rexc.ResponseError as exc:
        if "cluster support disabled" in str(exc).lower():
            return False
        raise
    return True


class _Connect:
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


class Blackboard:
    """A connected blackboard. Create it with :meth:`connect`."""

    def __init__(self, client: Any, settings: ClientSettings, cluster: bool) -> None:
        self.client = client
        self.settings = settings
        self.partitions = settings.partitions
        self.cluster = cluster
        self._scopes: dict[str, Scope] = {}
        #: Redis's clock: what every read compares the scripts' timestamps with.
        self.clock = ServerClock()
        #: Credentials the client connected with, for companion clients (the registry's).
        self.auth: dict[str, Any] = {}
        self._reserved = 0
        #: Invalid members the TTL sweep removed from the schedules (each logged).
        self.dropped_schedule_members = 0
        #: scopes a sweep passed over because their keys were damaged by raw commands
        self.damaged_scopes_skipped = 0

    @staticmethod
    def connect(
        url: str | None = None,
        *,
        partitions: int | None = None,
        settings: ClientSettings | None = None,
        cluster: bool | None = None,
        username: str | None = None,
        password: str | None = None,
    ) -> _Connect:
        """Connect to Redis at ``url`` (default ``BLACKBOARD_REDIS_URL``).

        ``partitions`` is pinned in ``bb:config`` at first use; a later client configured
        with another count raises :class:`ConfigMismatch`. Redis Cluster is detected.
        """
        base = settings or ClientSettings.from_env()
        s = replace(
            base,
            redis_url=url or base.redis_url,
            partitions=partitions if partitions is not None else base.partitions,
            cluster=base.cluster if cluster is None else cluster,
        )
        explicit_partitions = partitions is not None or settings is not None
        if (username is not None or password is not None) and s.redis_url:
            # redis-py lets a URL's credentials win over username=/password=: an agent
            # handed the operator's URL would silently connect as the operator.
            s = replace(s, redis_url=_without_credentials(s.redis_url))

        async def _open() -> Blackboard:
            if not s.redis_url:
                raise InvalidArgument(
                    "no Redis URL: pass one or set BLACKBOARD_REDIS_URL "
                    "(`blackboard server` starts an embedded one)"
                )
            if "://" not in s.redis_url:
                raise InvalidArgument(
                    f"Redis URL {mask_url(s.redis_url)!r} has no scheme: write it as "
                    f"redis://{mask_url(s.redis_url)}/0 (or rediss://, unix://)"
                )
            auth: dict[str, Any] = {}
            if username is not None:
                auth["username"] = username
            if password is not None:
                auth["password"] = password
            kw = _client_kwargs(s) | auth
            is_cluster = s.cluster
            client: Any
            if is_cluster is None:
                probe: Any = aredis.Redis.from_url(s.redis_url, **kw)
                try:
                    is_cluster = await _is_cluster(probe)
                except rexc.AuthenticationError as exc:
                    raise ServerUnavailable(
                        f"Redis at {mask_url(s.redis_url)} refused the login: {exc}"
                    ) from exc
                except (rexc.ConnectionError, rexc.TimeoutError, OSError) as exc:
                    raise ServerUnavailable(
                        f"cannot reach Redis at {mask_url(s.redis_url)}: {exc}"
                    ) from exc
                finally:
                    await probe.aclose()
            if is_cluster:
                client = RedisCluster.from_url(s.redis_url, **kw)
            else:
                # A blocking pool: a burst beyond max_connections waits for a connection
                # (pool_timeout) instead of failing with MaxConnectionsError.
                cp: Any = aredis.BlockingConnectionPool.from_url(
                    s.redis_url,
                    **kw,
                    max_connections=s.max_connections,
                    timeout=s.pool_timeout,
                    health_check_interval=s.health_check_interval,
                )
                cp.connection_class = with_fast_packing(cp.connection_class)
                client = aredis.Redis.from_pool(cp)  # type: ignore[attr-defined]
            bb = cls_(client, s, bool(is_cluster))
            bb.auth = dict(auth)
            try:
                await bb._pin_config(explicit_partitions)
            except BaseException:
                await bb.close()
                raise
            return bb

        cls_ = Blackboard
        return _Connect(_open)

    async def _pin_config(self, explicit: bool) -> None:
        try:
            got = await self.client.hget(K.CONFIG, "partitions")
            if got is None:
                await self.client.hsetnx(K.CONFIG, "partitions", self.partitions)
                await self.client.hsetnx(K.CONFIG, "schema", SCHEMA_VERSION)
                got = await self.client.hget(K.CONFIG, "partitions")
            await self.clock.sync(self.client)
        except (rexc.ConnectionError, rexc.TimeoutError, OSError) as exc:
            raise ServerUnavailable(f"cannot reach Redis: {exc}") from exc
        pinned = int(got)
        if pinned != self.partitions:
            if explicit:
                raise ConfigMismatch(
                    f"this Redis is pinned to {pinned} partitions; the client asked for "
                    f"{self.partitions}"
                )
            self.partitions = pinned  # follow the pinned value when the caller did not ask
        await self._load_scripts()
        await self._warn_on_unsafe_server()

    async def _load_scripts(self) -> None:
        for script in SCRIPTS.all():
            try:
                await self.client.script_load(script.source)
            except rexc.NoPermissionError:
                return  # a confined user may not SCRIPT LOAD; EVALSHA falls back lazily

    async def _warn_on_unsafe_server(self) -> None:
        """Warn (once per connect) when Redis could lose acknowledged writes or evict keys."""
        try:
            cfg = await self.client.config_get("appendonly")
            pol = await self.client.config_get("maxmemory-policy")
        except (rexc.NoPermissionError, rexc.ResponseError):
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

    @functools.cached_property
    def relays(self) -> Relays:
        """This process's inbox relays (started by the consumers of each partition)."""
        return Relays(self)

    async def close(self) -> None:
        if "relays" in self.__dict__:
            await self.relays.close()
        await self.clock.close()
        await self.client.aclose()

    def reserve_connections(self, n: int) -> None:
        """Grow (``n`` > 0) or shrink the pool by ``n`` connections held for a long time.

        A blocking reader (XREADGROUP BLOCK, BLMOVE) holds its connection for the whole
        block: each adds one for itself when it starts and removes it when it ends, so the
        pool is sized from what the process runs and short commands keep
        ``max_connections``. A cluster client opens connections per node without a bound
        that matters here, so it is left alone.
        """
        if self.cluster:
            return
        self._reserved = max(0, self._reserved + n)
        self.client.connection_pool.max_connections = self.settings.max_connections + (
            self._reserved
        )

    def now_ms(self) -> int:
        """Now in ms since the epoch on Redis's clock (the clock entries are stamped with)."""
        return self.clock.now_ms()

    async def __aenter__(self) -> Blackboard:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- scopes ---------------------------------------------------------------------------

    def scope(self, scope_id: str) -> Scope:
        """Handle on a scope (validated; nothing is sent)."""
        s = self._scopes.get(scope_id)
        if s is None:
            s = self._scopes[scope_id] = Scope(self, scope_id)
        return s

    def scope_keys(self, scope_id: str) -> ScopeKeys:
        validate_scope(scope_id)
        return ScopeKeys(scope_id, K.partition_of(scope_id, self.partitions))

    async def scope_ids(self, partition: int | None = None) -> list[str]:
        """Scope ids that ever held an entry (from the per-partition sets, not a scan)."""
        parts = range(self.partitions) if partition is None else [partition]
        out: list[str] = []
        for p in parts:
            out += sorted(m.decode() for m in await self.client.smembers(PartitionKeys(p).scopes))
        return out

    async def pipeline_evalsha(
        self, name: str, sha: str, keys: list[str], arg_lists: Sequence[Sequence[Any]]
    ) -> list[Any]:
        """Run one script many times in a pipeline; loads it and retries on NOSCRIPT."""
        for attempt in (0, 1):
            async with self.client.pipeline(transaction=False) as pipe:
                for args in arg_lists:
                    pipe.execute_command("EVALSHA", sha, len(keys), *keys, *args)
                replies = await pipe.execute(raise_on_error=False)
            if attempt == 0 and any(isinstance(r, rexc.NoScriptError) for r in replies):
                await load_script(self.client, name)
                continue  # writes are idempotent by id: re-running the batch is safe
            return list(replies)
        raise AssertionError("unreachable")

    # -- maintenance ----------------------------------------------------------------------

    async def sweep(
        self, *, partitions: Sequence[int] | None = None, limit: int = 1000, dry_run: bool = False
    ) -> SweepReport:
        """Remove expired entries with their index members and emit ``expired`` events.

        Finds due scopes through each partition's ttl zset, so the cost is O(expired).
        """
        out: dict[str, int] = {}
        now = self.now_ms()
        for p in partitions if partitions is not None else range(self.partitions):
            due = await self.client.zrangebyscore(PartitionKeys(p).ttl, "-inf", now)
            for raw in due:
                scope_id = raw.decode("utf-8", "replace")
                try:
                    sk = self.scope_keys(scope_id)
                except InvalidArgument:
                    # junk a confined agent may ZADD into the schedule: drop it, go on
                    log.warning("sweep: dropping invalid scope id %r from partition %d's "
                                "ttl schedule", raw[:80], p)
                    self.dropped_schedule_members += 1
                    await self.client.zrem(PartitionKeys(p).ttl, raw)
                    continue
                total = 0
                while True:
                    try:
                        removed, pending = await run_script(
                            self.client, "expire", sk.script_keys(),
                            [scope_id, str(limit), "1" if dry_run else "0"],
                        )
                    except rexc.ResponseError as exc:
                        # A scope its agent damaged with raw commands (the script refused
                        # whole): the other scopes' sweep goes on.
                        log.warning("sweep: scope %s skipped: %s (blackboard check --repair)",
                                    scope_id, exc)
                        self.damaged_scopes_skipped += 1
                        break
                    total += int(pending) if dry_run else int(removed)
                    if dry_run or int(removed) < limit:
                        break
                if total:
                    out[scope_id] = total
        return SweepReport(out, dry_run)

    async def ensure_groups(self, roles: Sequence[str]) -> None:
        """Create the consumer groups of ``roles`` on every bus (so trimming waits for them)."""
        await asyncio.gather(
            *(ensure_group(self, r, p) for r in roles for p in range(self.partitions))
        )

    async def trim(
        self, *, dry_run: bool = False, partitions: Sequence[int] | None = None
    ) -> TrimReport:
        """Trim each bus behind its slowest consumer group; a bus without groups is kept.

        Beside it the partition's flowmark is written: the lowest bus id some group has not
        taken in (acked). Retired entries whose last event is below it and that no buffer
        holds are reaped here.
        """
        out: dict[int, int] = {}
        reaped: dict[int, int] = {}
        for p in partitions if partitions is not None else range(self.partitions):
            pk = PartitionKeys(p)
            bus = pk.bus
            try:
                groups = await self.client.xinfo_groups(bus)
            except rexc.ResponseError:
                groups = []  # no such stream yet
            if not groups:
                if not dry_run:
                    await self.client.delete(pk.flowmark)  # nobody consumed: hold everything
                continue
            floor: tuple[int, int] | None = None
            # mark: the lowest id some group has not taken in (acked); everything below it
            # went through every group's buffer.lua, so the dataflow holds what it needs.
            mark: tuple[int, int] | None = None
            for g in groups:
                name = g["name"]
                point = _sid(g["last-delivered-id"])
                taken = (point[0], point[1] + 1)
                if int(g.get("pending", 0)):
                    summary = await self.client.xpending(bus, name)
                    # Acked between XINFO and XPENDING: nothing pending holds the group back.
                    if summary["min"] is not None:
                        point = min(point, _sid(summary["min"]))
                        taken = min(taken, _sid(summary["min"]))
                floor = point if floor is None else min(floor, point)
                mark = taken if mark is None else min(mark, taken)
            floor = floor or (0, 0)
            minid = f"{floor[0]}-{floor[1]}"
            if not dry_run and mark is not None:
                await self.client.set(pk.flowmark, f"{mark[0]}-{mark[1]}")
                reaped[p] = await self._reap(pk)
            if floor == (0, 0):
                continue
            if dry_run:
                out[p] = len(await self.client.xrange(bus, "-", f"({minid}"))
            else:
                out[p] = int(await self.client.xtrim(bus, minid=minid, approximate=False))
        return TrimReport(out, dry_run, reaped)

    async def _reap(self, pk: PartitionKeys, count: int = 500) -> int:
        """Delete the partition's retired entries that nothing needs any more."""
        cursor, total = "0", 0
        while True:
            cursor_b, n, _held = await run_script(
                self.client, "reap", [pk.retired], [cursor, str(count)]
            )
            total += int(n)
            cursor = cursor_b.decode() if isinstance(cursor_b, bytes) else str(cursor_b)
            if cursor == "0":
                return total

    # -- consumption ----------------------------------------------------------------------

    def consume(
        self,
        role: str,
        consumer: str,
        *,
        partitions: PartitionSource = None,
        count: int = 100,
        block_ms: int = 1000,
        claim_idle_ms: int = 30_000,
        max_deliveries: int = 5,
        options: ConsumeOptions | None = None,
        counters: ConsumeCounters | None = None,
    ) -> AsyncIterator[Batch]:
        """Batches of bus events for ``role`` (a consumer group) as ``consumer``.

        ``partitions``: the ones this consumer reads (a collection, or a callable returning
        the current set, as partition leases do); all when None. ``counters`` collects
        what the readers skipped or dropped.
        """
        for name, v in (("role", role), ("consumer", consumer)):
            if not v or not isinstance(v, str) or any(c.isspace() for c in v):
                raise InvalidArgument(f"{name} must be a non-empty str without spaces")
        opts = options or ConsumeOptions(
            count=count, block_ms=block_ms, claim_idle_ms=claim_idle_ms,
            max_deliveries=max_deliveries,
        )
        return consume(self, role, consumer, partitions, opts, counters)

    async def dlq(self, partition: int, count: int = 100) -> list[tuple[str, dict[str, str]]]:
        """The newest dead-lettered events of a partition: (dlq id, fields)."""
        items = await self.client.xrevrange(PartitionKeys(partition).dlq, count=count)
        return [
            (sid.decode(), {k.decode(): v.decode("utf-8", "replace") for k, v in f.items()})
            for sid, f in items
        ]


def _without_credentials(url: str) -> str:
    """``url`` without its ``user:password@`` and ``?username=``/``?password=``."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    query = "&".join(q for q in parts.query.split("&")
                     if q and q.split("=", 1)[0].lower() not in ("username", "password"))
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def _sid(raw: bytes | str) -> tuple[int, int]:
    s = raw.decode() if isinstance(raw, bytes) else raw
    ms, _, seq = s.partition("-")
    return int(ms), int(seq or 0)


def _decode_map(m: Any) -> dict[str, str]:
    return {
        (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
        for k, v in dict(m).items()
    }
