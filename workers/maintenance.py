"""The maintenance role: TTL sweep, decay pruning, capacity, dedupe, reindex, bus trimming,
schedule repair, belief revalidation (:mod:`workers.revalidate`).

Each run of a job covers every partition under one job lease whose TTL is the job's
interval, so among N maintenance workers each partition's job runs once per interval.
Every job has a dry run that reports what it would do. Jobs are scheduled by APScheduler's
asyncio scheduler.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from blackboard import Blackboard, Entry, InvalidScope
from blackboard.errors import OutOfMemory
from blackboard.validation import validate_scope
from consolidation.dedupe import find_duplicates, pooled_metadata
from consolidation.text import entry_text
from consolidation.transformer import Similarity
from memory.conversation import message_of
from retrieval.embedders import Embedder

from .leases import JobLease
from .oom import OomNotice
from .revalidate import revalidate_scopes
from .settings import WorkerSettings
from .similarity import entry_vectors

__all__ = ["JOBS", "JobReport", "Maintenance"]

log = logging.getLogger(__name__)

JOBS = ("sweep", "prune", "capacity", "dedupe", "reindex", "trim", "reschedule", "revalidate")


@dataclass(frozen=True, slots=True)
class JobReport:
    """What one job did (or, dry, would do) on one partition: scope -> count."""

    job: str
    partition: int
    dry_run: bool
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass
class Maintenance:
    """The jobs, callable directly (tests, ``blackboard maintain``) or on a schedule."""

    bb: Blackboard
    token: str
    settings: WorkerSettings = field(default_factory=WorkerSettings)
    similarity: Similarity | None = None
    reembed: Callable[[list[Entry]], Awaitable[int]] | None = None
    embedder_name: str | None = None
    #: Near duplicates by meaning when ``similarity`` is not set: the entries' stored
    #: vectors of this embedder (:func:`workers.similarity.entry_vectors`).
    embedder: Embedder | None = None
    dedupe_threshold: float = 0.95
    dedupe_window: int = 2000
    #: Job runs that failed on a partition (each logged); that partition waits a run.
    failures: int = 0
    #: Invalid scope ids skipped in partition schedules and scope sets (each logged).
    skipped_scopes: int = 0
    _running: set[asyncio.Task[Any]] = field(default_factory=set, repr=False)
    _stopping: bool = field(default=False, repr=False)
    _oom: OomNotice = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._oom = OomNotice("maintenance", self.settings.oom_say_every_s)
    #: (job, scope) -> the scope's newest feed id when the job last went through it: an
    #: unchanged scope is not read again (dedupe and reindex read every entry, so an idle
    #: worker's cost grew with what it held: ~15 commands/s per 1,000 entries).
    _seen: dict[tuple[str, str], str] = field(default_factory=dict, repr=False)

    async def drain(self) -> None:
        """Let job runs in hand finish their current partition, then return (stopping)."""
        self._stopping = True
        await asyncio.gather(*self._running, return_exceptions=True)

    def _valid(self, names: Iterable[str]) -> list[str]:
        names = list(names)
        ok = valid_scopes(names)
        self.skipped_scopes += len(names) - len(ok)
        return ok

    def counters(self) -> dict[str, int]:
        return {"maintenance_failures": self.failures, "maintenance_skipped_scopes": (
            self.skipped_scopes)}

    async def _scopes(self, partition: int) -> list[str]:
        """The partition's scope ids; junk members (an agent may SADD there) are skipped."""
        return sorted(self._valid(await self.bb.upkeep(partition).scope_ids()))

    # -- jobs -----------------------------------------------------------------------------

    async def sweep(self, partition: int, dry_run: bool = False) -> JobReport:
        rep = await self.bb.sweep(partitions=[partition], dry_run=dry_run)
        return JobReport("sweep", partition, dry_run, dict(rep.expired))

    async def prune(self, partition: int, dry_run: bool = False) -> JobReport:
        """Evict entries whose decayed strength crossed the threshold: O(evicted)."""
        due = await self.bb.upkeep(partition).prune_due(self.bb.now_ms())
        return await self._per_scope("prune", partition, due, "decay", dry_run)

    async def capacity(self, partition: int, dry_run: bool = False) -> JobReport:
        """Evict the weakest beyond max_entries (after a policy was tightened)."""
        scopes = await self.bb.upkeep(partition).scope_ids()
        return await self._per_scope("capacity", partition, scopes, "capacity", dry_run)

    async def reschedule(self, partition: int, dry_run: bool = False) -> JobReport:
        """Put every scope of the partition back in the ttl / prune schedules where its own
        indexes say it is due (an agent may move another scope's place: see
        ``reschedule.lua``). O(scopes); counts the places changed."""
        counts: dict[str, int] = {}
        upkeep = self.bb.upkeep(partition)
        for scope_id in await self._scopes(partition):
            if moved := await upkeep.reschedule(scope_id, dry_run):
                counts[scope_id] = moved
        return JobReport("reschedule", partition, dry_run, counts)

    async def _per_scope(
        self, job: str, partition: int, scopes: list[str], mode: str, dry_run: bool
    ) -> JobReport:
        counts: dict[str, int] = {}
        upkeep = self.bb.upkeep(partition)
        for scope_id in sorted(self._valid(scopes)):
            while True:
                # None: a scope its agent damaged (the script refused whole), skipped; the
                # partition's other scopes are still pruned.
                got = await upkeep.prune(scope_id, mode, 500, dry_run, job)
                if got is None:
                    break
                removed, due = got
                n = due if dry_run else removed
                if n:
                    counts[scope_id] = counts.get(scope_id, 0) + n
                if dry_run or removed < 500:
                    break
        return JobReport(job, partition, dry_run, counts)

    async def _changed(self, job: str, scope_ids: list[str],
                       dry_run: bool) -> list[tuple[str, str]]:
        """(scope, its newest feed id) for the scopes that changed since ``job`` last went
        through them (every scope on a dry run; the head is read before the job reads, so a
        change meanwhile is seen next time)."""
        feeds = [self.bb.scope(s).keys.feed for s in scope_ids]
        heads = await self.bb.reads.newest_ids(feeds)
        return [(s, heads[f]) for s, f in zip(scope_ids, feeds, strict=True)
                if dry_run or self._seen.get((job, s)) != heads[f]]

    async def dedupe(self, partition: int, dry_run: bool = False) -> JobReport:
        """Merge exact and near duplicates within each scope of the partition.

        The newest ``dedupe_window`` entries of a scope are compared; each group keeps its
        oldest entry, which takes the union of tags and sources and a reinforcement per
        merged entry; the others are deleted. Near duplicates need ``similarity`` or the
        ``embedder`` and pass the cohesion guard of :func:`consolidation.dedupe.find_duplicates`.
        Superseded versions are history, not duplicates: a belief's or a team statement's
        earlier versions (``as_of`` reads them) repeat its text, and the oldest member
        would otherwise be kept over the live one. Conversation messages are records of
        turns: the same words said twice are two turns (a session's history, e.g. the OpenAI
        Agents session's, must keep both), so they are never merged.
        """
        counts: dict[str, int] = {}
        for scope_id, head in await self._changed("dedupe", await self._scopes(partition),
                                                  dry_run):
            scope = self.bb.scope(scope_id)
            entries = [e for e in await scope.entries(limit=self.dedupe_window)
                       if e.superseded_by is None and message_of(e) is None]
            if not dry_run:
                self._seen[("dedupe", scope_id)] = head
            if len(entries) < 2:
                continue
            vectors = await self._vectors(entries)
            groups = find_duplicates(entries, vectors, threshold=self.dedupe_threshold)
            by_id = {e.id: e for e in entries}
            merged = 0
            for g in groups:
                keep, drop = by_id[g.keep], [by_id[i] for i in g.merged]
                if not drop:
                    continue
                merged += len(drop)
                if dry_run:
                    continue
                tags = set(keep.tags).union(*(d.tags for d in drop))
                source = sorted(
                    set(keep.source).union(*(d.source for d in drop), (d.id for d in drop))
                )
                meta = pooled_metadata(keep, drop)
                op = "m" + "".join(sorted(d.id for d in drop))[-60:]
                await scope.update(keep.id, tags=tags, source=source, metadata=meta, op_id=op[:64])
                for d in drop:
                    for _ in range(max(1, d.reinforcements + 1)):
                        await scope.reinforce(keep.id, by="dedupe", boost=0.0)
                    await scope.delete(d.id, merged=True)
            if merged:
                counts[scope.id] = merged
        return JobReport("dedupe", partition, dry_run, counts)

    async def _vectors(self, entries: list[Entry]) -> np.ndarray | None:
        if self.similarity is not None:
            return np.asarray(self.similarity([entry_text(e) for e in entries]))
        if self.embedder is not None:
            return await entry_vectors(entries, self.embedder)
        return None

    async def reindex(self, partition: int, dry_run: bool = False) -> JobReport:
        """Re-embed entries whose embedding is missing or from another embedder (after the
        configured embedder changed: never a mix of two models in one index)."""
        if self.reembed is None:
            return JobReport("reindex", partition, dry_run, {})
        counts: dict[str, int] = {}
        for scope_id, head in await self._changed("reindex", await self._scopes(partition),
                                                  dry_run):
            scope = self.bb.scope(scope_id)
            stale = [
                e
                for e in await scope.entries(limit=None)
                if e.embedding is None or e.embedder != self.embedder_name
            ]
            if stale:
                counts[scope.id] = len(stale) if dry_run else await self.reembed(stale)
            if not dry_run:
                self._seen[("reindex", scope_id)] = head
        return JobReport("reindex", partition, dry_run, counts)

    async def trim(self, partition: int, dry_run: bool = False) -> JobReport:
        """Trim the partition's bus behind its slowest consumer group."""
        rep = await self.bb.trim(dry_run=dry_run, partitions=[partition])
        return JobReport("trim", partition, dry_run, {"bus": rep.total} if rep.total else {})

    async def revalidate(self, partition: int, dry_run: bool = False) -> JobReport:
        """Recompute freshness and status of the partition's due beliefs."""
        counts = await revalidate_scopes(self.bb, await self._scopes(partition), dry_run)
        return JobReport("revalidate", partition, dry_run, counts)

    # -- scheduling -----------------------------------------------------------------------

    def interval_s(self, job: str) -> float:
        s = self.settings
        return {
            "sweep": s.sweep_every_s,
            "prune": s.prune_every_s,
            "capacity": s.prune_every_s,
            "dedupe": s.dedupe_every_s,
            "reindex": s.reindex_every_s,
            "trim": s.trim_every_s,
            "reschedule": s.reschedule_every_s,
            "revalidate": s.revalidate_every_s,
        }[job]

    async def run_job(self, job: str, dry_run: bool = False) -> list[JobReport]:
        """Run ``job`` on every partition when this worker gets the job's lease (a dry run
        needs none); [] when another worker runs it this interval."""
        lease = JobLease(self.bb, job, self.token, int(self.interval_s(job) * 1000))
        fn = getattr(self, job)
        out = []
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)  # from the lease on: drain() waits for it all
        try:
            if not dry_run and not await lease.try_run():
                return []
            for p in range(self.bb.partitions):
                if self._stopping:
                    break
                out.append(await self._run_one(job, fn, p, dry_run))
        finally:
            if task is not None:
                self._running.discard(task)
        return [r for r in out if r is not None]

    async def _run_one(
        self, job: str, fn: Callable[[int, bool], Awaitable[JobReport]], p: int, dry_run: bool
    ) -> JobReport | None:
        try:
            return await fn(p, dry_run)
        except OutOfMemory:
            # The jobs that free memory (sweep, prune) run over the limit; the others wait.
            self._oom.say(f"maintenance job {job} waits until memory is freed")
            return None
        except Exception:
            self.failures += 1
            log.exception("maintenance job %s failed on partition %d", job, p)
            return None

    def schedule(self, scheduler: object) -> None:
        """Add every job to an APScheduler ``AsyncIOScheduler``."""
        for job in JOBS:
            scheduler.add_job(  # type: ignore[attr-defined]
                self.run_job,
                "interval",
                args=[job],
                seconds=self.interval_s(job),
                id=f"maintenance-{job}",
                max_instances=1,
                coalesce=True,
                next_run_time=None if job == "reindex" else _now(),
            )


def valid_scopes(names: Iterable[str]) -> list[str]:
    """The names that are valid scope ids (schedules are hints; agents can write junk)."""
    out = []
    for n in names:
        try:
            out.append(validate_scope(n))
        except InvalidScope:
            log.warning("skipping invalid scope id %r in a partition schedule", n[:80])
    return out


def _now() -> object:
    from datetime import datetime

    return datetime.now()
