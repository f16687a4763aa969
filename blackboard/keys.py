"""Every Redis key name of the project, built here and nowhere else.

Keys of a scope and of its partition carry the hash tag ``{pN}``, so one Lua script can
touch all of them atomically on a single Redis and on Redis Cluster alike. Lua scripts that
must reach keys they learn only while running (the tag sets of an entry being deleted, the
entries evicted for capacity) derive them from a scope prefix with the suffixes below; the
suffix constants are the single definition both sides use.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

__all__ = [
    "ACL_AGENTS",
    "CONFIG",
    "EDGES",
    "EDGE_RECORDS",
    "SCOPES",
    "SCOPE_RECORDS",
    "WORKERS",
    "PartitionKeys",
    "ScopeKeys",
    "edge_record",
    "lease",
    "partition_of",
    "scope_record",
]

ROOT = "bb"

# Global records (not in any partition's slot).
CONFIG = f"{ROOT}:config"  # hash: partitions, schema version
SCOPES = f"{ROOT}:scopes"  # registry of scope configs (prefix of the redis-om records)
EDGES = f"{ROOT}:edges"  # registry of dataflow edges (prefix of the redis-om records)
WORKERS = f"{ROOT}:workers"  # worker heartbeats (prefix of the redis-om records)
# Plain sets of the pks of the registry records, so listing them never needs FT.SEARCH
# (absent on Redis without the Query Engine) nor SCAN. Outside the record prefixes above,
# so a Query Engine index ``ON HASH PREFIX bb:scopes:`` never sees them.
SCOPE_RECORDS = f"{ROOT}:registry:scopes"  # set of scope ids with a config record
EDGE_RECORDS = f"{ROOT}:registry:edges"  # set of dataflow edge ids
# Hash agent id -> JSON list of its teams: the ACL grants (written by `acl grant`, admin only).
ACL_AGENTS = f"{ROOT}:acl:agents"
AUDIT = f"{ROOT}:audit"  # stream of operator actions (re-drives), in its own slot


def scope_record(scope_id: str) -> str:
    """Hash of a scope's registry record (redis-om ``HashModel``): ``bb:scopes:<scope>``."""
    return f"{SCOPES}:{scope_id}"


def edge_record(edge_id: str) -> str:
    """Hash of a dataflow edge's registry record (redis-om ``HashModel``): ``bb:edges:<id>``."""
    return f"{EDGES}:{edge_id}"

# Suffixes of per-scope keys under ``bb:{pN}:s:<scope>:`` (mirrored in the Lua scripts).
ENTRY = "e:"
TAG = "tag:"


def partition_of(scope_id: str, partitions: int) -> int:
    """The partition a scope lives in: ``crc32(scope_id) % partitions``."""
    return zlib.crc32(scope_id.encode("utf-8")) % partitions


def lease(role: str, partition: int) -> str:
    """Lease on one partition for one consumer role: ``bb:lease:<role>:<p>``."""
    return f"{ROOT}:lease:{role}:{partition}"


def lease_table() -> str:
    """Hash of every role's partition leases and their holders' beats: ``bb:leases`` (its
    fields are :class:`blackboard.lease.LeaseTable`'s)."""
    return f"{ROOT}:leases"


def job_run_lease(job: str) -> str:
    """Lease under which one run of a periodic job covers every partition:
    ``bb:lease:job:<job>``."""
    return f"{ROOT}:lease:job:{job}"


def target_lease(target: str) -> str:
    """Lease under which one worker at a time drafts into a target scope whose drafts
    several edges derive from one prior (team beliefs): ``bb:lease:target:<target>``."""
    return f"{ROOT}:lease:target:{target}"


def job_lease(job: str, partition: int) -> str:
    """Lease under which a periodic job runs on one partition: ``bb:lease:job:<job>:<p>``."""
    return f"{ROOT}:lease:job:{job}:{partition}"


@dataclass(frozen=True, slots=True)
class PartitionKeys:
    """Keys shared by all scopes of one partition."""

    partition: int

    @property
    def tag(self) -> str:
        """The hash tag, ``{pN}``."""
        return f"{{p{self.partition}}}"

    @property
    def base(self) -> str:
        return f"{ROOT}:{self.tag}"

    @property
    def bus(self) -> str:
        """Stream of every event of the partition's scopes (consumer groups read it)."""
        return f"{self.base}:bus"

    @property
    def dlq(self) -> str:
        """Stream of events that consumers failed on too often."""
        return f"{self.base}:dlq"

    @property
    def scopes(self) -> str:
        """Set of the scope ids that live in this partition."""
        return f"{self.base}:scopes"

    @property
    def ttl(self) -> str:
        """Zset scope id -> earliest expires_at (ms) of its entries; the sweep starts here."""
        return f"{self.base}:ttl"

    @property
    def prune(self) -> str:
        """Zset scope id -> earliest evict time (ms) of its entries; pruning starts here."""
        return f"{self.base}:prune"

    @property
    def pendings(self) -> str:
        """Set of the non-empty dataflow buffers of this partition (trigger checks read it)."""
        return f"{self.base}:pendings"

    @property
    def inflight(self) -> str:
        """Hash buffer key -> size of the batch being transformed (replays take the same)."""
        return f"{self.base}:inflight"

    def pending(self, edge: str, target: str) -> str:
        """Durable ingestion buffer of a dataflow edge for one target scope."""
        return f"{self.base}:pending:{edge}:{target}"

    def owned(self, owner: str) -> str:
        """Hash {entries, bytes}: the quota counters of the live entries of every scope of
        ``owner`` (``agent:<a>`` / ``team:<t>``) in this partition; under the owner's key
        prefix, as the scripts that move it run as the agent."""
        return f"{self.base}:s:{owner}:owned"

    def cfg(self, scope_id: str) -> str:
        """Hash with the enforced limits of a scope (read by the write script)."""
        return f"{self.base}:cfg:{scope_id}"

    @property
    def inbox(self) -> str:
        """List of content events (``<scope>|<entry id>|<version>``) the mutation scripts
        push; agents may only RPUSH it. The relay moves them, verified, to the bus."""
        return f"{self.base}:inbox"

    @property
    def relaying(self) -> str:
        """List: inbox items a relay of an earlier version took (BLMOVE) and did not move to
        the bus; relays now wait without taking any (:meth:`blackboard.relay.Inbox.wait`)."""
        return f"{self.base}:relaying"

    @property
    def retired(self) -> str:
        """Set of ``<scope>|<entry id>`` evicted or expired for readers but kept for the
        dataflow until every edge has consolidated them (agents may only SADD it)."""
        return f"{self.base}:retired"

    @property
    def flowmark(self) -> str:
        """String: the bus id every consumer group has taken in (the trim point); an
        entry whose last event is below it and holds no buffer item can be deleted."""
        return f"{self.base}:flowmark"

    @property
    def unembedded(self) -> str:
        """Zset ``<scope>|<entry id>`` -> ms first queued: entries whose content changed
        and whose vector the index role has not settled (agents may only ZADD it; the
        mutation scripts fill it while :attr:`indexing` exists)."""
        return f"{self.base}:unembedded"

    @property
    def indexing(self) -> str:
        """String set by the index role: writes queue their entries in :attr:`unembedded`
        (without it nobody would drain the queue, so nothing is queued)."""
        return f"{self.base}:indexing"

    @property
    def edges_version(self) -> str:
        """Counter bumped on every edge install, update or removal: a buffering worker
        that matched events against an older edge set reloads and matches again."""
        return f"{self.base}:edgesv"


@dataclass(frozen=True, slots=True)
class ScopeKeys:
    """Keys of one scope: ``bb:{pN}:s:<scope>:...``."""

    scope_id: str
    partition: int

    @property
    def part(self) -> PartitionKeys:
        return PartitionKeys(self.partition)

    @property
    def prefix(self) -> str:
        """Common prefix of every key of the scope (ends with ``:``)."""
        return f"{self.part.base}:s:{self.scope_id}:"

    def entry(self, entry_id: str) -> str:
        """Hash holding one entry."""
        return f"{self.prefix}{ENTRY}{entry_id}"

    def tag_set(self, tag: str) -> str:
        """Set of the ids of the entries carrying ``tag``."""
        return f"{self.prefix}{TAG}{tag}"

    @property
    def ix(self) -> str:
        """Zset entry id -> created_at (ms)."""
        return f"{self.prefix}ix"

    @property
    def tags(self) -> str:
        """Hash tag -> number of live entries carrying it."""
        return f"{self.prefix}tags"

    @property
    def keys(self) -> str:
        """Hash logical key -> entry id."""
        return f"{self.prefix}keys"

    @property
    def exp(self) -> str:
        """Zset entry id -> expires_at (ms)."""
        return f"{self.prefix}exp"

    @property
    def evict(self) -> str:
        """Zset entry id -> time (ms) its decayed strength falls below the threshold."""
        return f"{self.prefix}evict"

    @property
    def feed(self) -> str:
        """Stream of the scope's events, for observers; capped ``MAXLEN ~``."""
        return f"{self.prefix}feed"

    @property
    def cfg(self) -> str:
        return self.part.cfg(self.scope_id)

    @property
    def usage(self) -> str:
        """Hash {bytes}: the quota counter of the scope's live entries (docs/security.md
        "Quotas"; the entry count is ``ZCARD ix``)."""
        return f"{self.prefix}usage"

    @property
    def transferred(self) -> str:
        """Set ``<source scope>|<original id>`` of the entries a generational transfer has
        copied into this scope, ever (``memory.transfer``): ``bb:{pN}:transfers:<scope>``,
        a partition key outside the scope's prefix, so only the service user reaches it."""
        return f"{self.part.base}:transfers:{self.scope_id}"

    @property
    def removed(self) -> str:
        """Hash {expired, decayed, capacity, merged}: entries maintenance removed from the
        scope, ever (pool statistics; counted by the scripts that remove them)."""
        return f"{self.prefix}removed"

    @property
    def toc(self) -> str:
        """Hash node id -> JSON node of the scope's table of contents (year, month, week,
        day, segment; ``retrieval.toc``), and field ``_v``: its version, bumped by every
        change (``toc.lua`` compares and sets it)."""
        return f"{self.prefix}toc"

    @property
    def toc_placed(self) -> str:
        """Hash entry id -> the table-of-contents segment holding it: an entry is placed
        once, however often its event is delivered."""
        return f"{self.prefix}tocin"

    def script_keys(self) -> list[str]:
        """The declared KEYS of every per-scope mutation script, in header order.

        Only keys of the scope itself: EVALSHA needs read and write permission on each
        declared key, and a confined agent must hold neither read on the partition bus nor
        write on the scope's cfg. The scripts derive those (bus, cfg, partition scopes /
        ttl / prune) from the prefix in KEYS[1]; see ``scripts/_lib.lua``.
        """
        return [
            self.prefix,  # KEYS[1] is the prefix: entry, tag and partition keys derive from it
            self.ix,
            self.tags,
            self.keys,
            self.exp,
            self.evict,
            self.feed,
        ]


def worker(worker_id: str) -> str:
    """Hash of one worker's heartbeat (role, partitions, lag, counters); expires if it dies."""
    return f"{WORKERS}:{worker_id}"


def workers_of(role: str) -> str:
    """Zset worker id -> last heartbeat (ms) of the workers of one role."""
    return f"{WORKERS}:role:{role}"


def worker_roles() -> str:
    """Set of the roles that have (had) workers, so stats can list them without a scan."""
    return f"{WORKERS}:roles"
