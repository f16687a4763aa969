"""The blackboard: a connection to Redis (single or cluster), handles on what it holds --
scopes, and per partition its bus, dataflow buffers and upkeep; the lease table, the
workers' presence, the registry's records, the reads over many scopes, the dead letters,
the dataflow's progress and the edges versions -- and the operations across partitions
(sweep, trim, check, consume)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import replace
from typing import Any

from . import keys as K
from .backlog import Progress
from .bus import Bus
from .check import CheckReport, check_scopes
from .clock import ServerClock
from .connection import Connect, without_credentials
from .consumer import Batch, ConsumeCounters, ConsumeOptions, PartitionSource, consume
from .dead_letters import DeadLetters
from .durability import Wait
from .edges_version import EdgesVersions
from .errors import InvalidArgument
from .handler_loop import BatchHandler, handle_batches
from .keys import ScopeKeys
from .lease import Lease, LeaseTable
from .opening import open_blackboard
from .pending import PendingBuffer
from .presence import Presence
from .probe import FeedProbe
from .reads import Reads
from .records import Records
from .relay import Relays
from .scope import Scope
from .scripts import SCRIPTS
from .settings import ClientSettings
from .stored_vectors import StoredVectors
from .upkeep import SweepReport, TrimReport, Upkeep
from .validation import validate_scope
from .vector_queue import VectorQueue

__all__ = ["Blackboard", "SweepReport", "TrimReport"]


class Blackboard:
    """A connected blackboard. Create it with :meth:`connect` (:mod:`blackboard.opening`
    opens it)."""

    def __init__(self, client: Any, settings: ClientSettings, cluster: bool) -> None:
        self.client = client
        self.settings = settings
        self.partitions = settings.partitions
        self.cluster = cluster
        #: What a scope write waits for after it is applied (None: the master's ack).
        self.wait = Wait.of(settings)
        self._scopes: dict[str, Scope] = {}
        #: Redis's clock: what every read compares the scripts' timestamps with.
        self.clock = ServerClock()
        #: Credentials the client connected with, for companion clients (the registry's).
        self.auth: dict[str, Any] = {}
        self._reserved = 0
        #: Invalid members the TTL sweep removed from the schedules (each logged).
        self.dropped_schedule_members = 0
        #: scopes a sweep or prune passed over because raw commands damaged their keys
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
        durability: str | None = None,
        wait_replicas: int | None = None,
        wait_aof: bool | None = None,
    ) -> Connect:
        """Connect to Redis at ``url`` (default ``BLACKBOARD_REDIS_URL``).

        ``partitions`` is pinned in ``bb:config`` at first use; a later client configured
        with another count raises :class:`ConfigMismatch`. Redis Cluster is detected.
        ``durability="replicated"`` (or ``wait_replicas`` N, ``wait_aof``) makes every
        scope write also wait for replicas / the AOF fsync (:mod:`blackboard.durability`);
        given here, they override the settings'.
        """
        base = settings or ClientSettings.from_env()
        s = replace(
            base,
            redis_url=url or base.redis_url,
            partitions=partitions if partitions is not None else base.partitions,
            cluster=base.cluster if cluster is None else cluster,
            durability=base.durability if durability is None else durability,
            wait_replicas=base.wait_replicas if wait_replicas is None else wait_replicas,
            wait_aof=base.wait_aof if wait_aof is None else wait_aof,
        )
        explicit_partitions = partitions is not None or settings is not None
        if (username is not None or password is not None) and s.redis_url:
            # redis-py lets a URL's credentials win over username=/password=: an agent
            # handed the operator's URL would silently connect as the operator.
            s = replace(s, redis_url=without_credentials(s.redis_url))

        return Connect(functools.partial(
            open_blackboard, Blackboard, s, username, password, explicit_partitions))

    @functools.cached_property
    def relays(self) -> Relays:
        """This process's inbox relays (started by the consumers of each partition)."""
        return Relays(self)

    @functools.cached_property
    def feed_probe(self) -> FeedProbe:
        """Scopes' newest feed ids asked around a search (read-your-writes checks)."""
        return FeedProbe(self)

    async def close(self) -> None:
        if "relays" in self.__dict__:
            await self.relays.close()
        if "feed_probe" in self.__dict__:
            await self.feed_probe.aclose()
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

    async def reconnect(self) -> Blackboard:
        """A second connection to this server, with these settings and credentials, for code
        running on another event loop (a client is bound to the loop it was opened on); the
        caller closes it. A cluster client's credentials come from the settings alone."""
        kw = self.client.connection_pool.connection_kwargs if not self.cluster else {}
        return await Blackboard.connect(
            self.settings.redis_url, settings=self.settings,
            username=kw.get("username"), password=kw.get("password"),
        )

    async def missing_scripts(self) -> list[str]:
        """Names of the scripts the server does not hold (PING first: raises when it is
        down). A server can serve confined agents only with none missing: an agent user may
        only EVALSHA what the service or admin user loaded."""
        await self.client.ping()
        scripts = SCRIPTS.all()
        have = await self.client.script_exists(*(s.sha for s in scripts))
        if isinstance(have, dict):  # a cluster answers per node: loaded means on every primary
            have = [all(v) for v in zip(*have.values(), strict=True)]
        return [s.name for s, ok in zip(scripts, have, strict=True) if not ok]

    async def server_info(self, section: str) -> dict[str, Any]:
        """One section of the server's ``INFO`` (``cpu``, ``server``, ``memory``...); on a
        cluster, the node the client asks first."""
        return dict(await self.client.info(section))

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
            out += await self.upkeep(p).scope_ids()
        return out

    # -- what each partition holds ----------------------------------------------------------

    def bus(self, partition: int) -> Bus:
        """The partition's bus: consumer groups, acks, DLQ, lengths."""
        return Bus(self, partition)

    def vector_queue(self, partition: int) -> VectorQueue:
        """The partition's queue of entries waiting for a vector (the index role's)."""
        return VectorQueue(self, partition)

    def pending(self, partition: int) -> PendingBuffer:
        """The partition's dataflow buffers."""
        return PendingBuffer(self, partition)

    def upkeep(self, partition: int) -> Upkeep:
        """The partition's schedules and the scripts that expire, prune and trim it."""
        return Upkeep(self, partition)

    @functools.cached_property
    def lease_table(self) -> LeaseTable:
        """Every role's partition leases (``bb:leases``)."""
        return LeaseTable(self)

    def job_lease(self, job: str) -> Lease:
        """The lease under which one run of a periodic job covers every partition."""
        return Lease(self, K.job_run_lease(job))

    @functools.cached_property
    def stored_vectors(self) -> StoredVectors:
        """Entries' stored vectors read back, and whether an index role stores them now."""
        return StoredVectors(self)

    @functools.cached_property
    def presence(self) -> Presence:
        """The workers' heartbeat records."""
        return Presence(self)

    @functools.cached_property
    def records(self) -> Records:
        """The registry's scope and edge records (redis-om models on this client)."""
        return Records(self)

    @functools.cached_property
    def edges_versions(self) -> EdgesVersions:
        """Every partition's edges version (workers reload the edges when it moves)."""
        return EdgesVersions(self)

    # -- across partitions ----------------------------------------------------------------

    @functools.cached_property
    def reads(self) -> Reads:
        """Every read over many scopes, each in one round trip (``blackboard/reads.py``)."""
        return Reads(self)

    @functools.cached_property
    def dead_letters(self) -> DeadLetters:
        """The dead letters of every bus: list, re-drive, audit."""
        return DeadLetters(self)

    @functools.cached_property
    def progress(self) -> Progress:
        """How far the dataflow is behind the writes (backlog, settled)."""
        return Progress(self)

    # -- maintenance ----------------------------------------------------------------------

    async def sweep(
        self, *, partitions: Sequence[int] | None = None, limit: int = 1000, dry_run: bool = False
    ) -> SweepReport:
        """Remove expired entries with their index members and emit ``expired`` events.

        Finds due scopes through each partition's ttl zset, so the cost is O(expired).
        """
        out: dict[str, int] = {}
        for p in partitions if partitions is not None else range(self.partitions):
            out |= await self.upkeep(p).sweep(limit, dry_run)
        return SweepReport(out, dry_run)

    async def ensure_groups(self, roles: Sequence[str]) -> None:
        """Create the consumer groups of ``roles`` on every bus (so trimming waits for them)."""
        await asyncio.gather(
            *(self.bus(p).ensure_group(r) for r in roles for p in range(self.partitions))
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
            trimmed, gone = await self.upkeep(p).trim(dry_run)
            if gone is not None:
                reaped[p] = gone
            if trimmed is not None:
                out[p] = trimmed
        return TrimReport(out, dry_run, reaped)

    async def check(
        self, *, repair: bool = False, scopes: Iterable[str] | None = None
    ) -> CheckReport:
        """Verify (and with ``repair`` fix) every scope's indexes against its entries
        (:mod:`blackboard.check`). ``scopes``: only these (default: every scope in the
        partition ``scopes`` sets)."""
        return await check_scopes(self.client, self.partitions, repair=repair, scopes=scopes)

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

    async def handle_batches(
        self,
        role: str,
        consumer: str,
        handler: BatchHandler,
        stopping: asyncio.Event,
        partitions: PartitionSource = None,
        opts: ConsumeOptions | None = None,
        *,
        finish_timeout_s: float = 30.0,
        changed: asyncio.Event | None = None,
        counters: ConsumeCounters | None = None,
    ) -> None:
        """Run ``handler`` on every batch of ``role`` for ``consumer`` until ``stopping``
        is set, in each partition's reader task: :func:`blackboard.handler_loop.handle_batches`
        says how partitions are re-read, how it stops and what it raises."""
        await handle_batches(self, role, consumer, handler, stopping, partitions, opts,
                             finish_timeout_s, changed, counters)
