"""Consistency checker: every index of every scope verified against the entry hashes.

The entry hashes are the source of truth; ``ix``, the tag sets, the ``tags`` counters, the
``keys`` hash, ``exp``, ``evict`` and the partition ``scopes`` / ``ttl`` / ``prune`` sets
are derived from them by the write scripts. After a crash (AOF replays whole scripts, so
this should never find anything), a manual edit, or a hostile agent ZREM-ing a schedule,
``bb.check()`` reports each difference as a :class:`Drift`; ``repair=True`` rewrites the
index to match the entries. It also finds what raw commands on a scope's own keys can do
to the scripts: an index key of the wrong type or a feed with no room for new ids (the
scripts then refuse every write; repair deletes the key and rebuilds it), and an entry
without its event (repair publishes it, so the dataflow still consolidates it). Retired
entries (evicted or expired, kept for the dataflow) belong in no reader index, only in the
partition's ``retired`` set. Run the repair while writers are quiet: a write racing the
check can be reported (harmlessly) or, repaired from a stale read, need a second run.

Cost: one SCAN over each scope's keys plus one read per entry: an operator's tool, not
the hot path.

Here: the report (:class:`Drift`, :class:`CheckReport`) and :func:`check_scopes`, the walk
over every scope; each scope's checks are :class:`blackboard.scope_check.ScopeCheck`, the
quota counters and invented keys :mod:`blackboard.quota_check`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from . import keys as K
from .codec import as_str
from .errors import AccessDenied, InvalidArgument, ServerError
from .keys import PartitionKeys, ScopeKeys
from .quota_check import DriftFn, check_invented, check_owned, new_tally, owned_before
from .scope_check import ScopeCheck
from .validation import validate_scope

__all__ = ["CheckReport", "Drift", "check_scopes"]


@dataclass(frozen=True, slots=True)
class Drift:
    """One difference between an index and the entries.

    ``index``: ix, tag_set, tags, keys, exp, evict, scopes, ttl, prune, type, feed, event,
    retired; usage, owned (quota counters), invented (a key outside the layout; ``scope``
    is then its owner). ``member``: the
    entry id, tag, logical key or scope id concerned. ``harmless``: a schedule that is
    early or stale only costs the sweep a visit (the scripts tolerate it).
    """

    scope: str
    index: str
    member: str
    problem: str
    harmless: bool = False


@dataclass(slots=True)
class CheckReport:
    scopes: int = 0
    entries: int = 0
    drift: list[Drift] = field(default_factory=list)
    repaired: bool = False
    #: what is not drift but an operator should know (a server without a memory limit)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No drift that matters (harmless early schedules are listed, not failures)."""
        return not any(not d.harmless for d in self.drift)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "scopes": self.scopes, "entries": self.entries,
                "repaired": self.repaired, "drift": [asdict(d) for d in self.drift],
                "notes": list(self.notes)}


def _drift_to(report: CheckReport) -> DriftFn:
    def add(scope: str, index: str, member: str, problem: str, harmless: bool = False) -> None:
        report.drift.append(Drift(scope, index, member, problem, harmless))
    return add


async def _scope_ids(
    client: Any, partitions: int, report: CheckReport, repair: bool
) -> list[tuple[str, int]]:
    """Scope ids from the partition sets (invalid or misplaced members are drift)."""
    out: list[tuple[str, int]] = []
    for p in range(partitions):
        key = PartitionKeys(p).scopes
        for raw in sorted(await client.smembers(key)):
            sid = as_str(raw, "replace")  # a member written by hand is reported, not fatal
            try:
                validate_scope(sid)
                ok = K.partition_of(sid, partitions) == p
            except InvalidArgument:
                ok = False
            if ok:
                out.append((sid, p))
                continue
            report.drift.append(Drift(sid[:200], "scopes", sid[:200], f"not a scope of p{p}"))
            if repair:
                await client.srem(key, raw)
    return out


async def _check_maxmemory(client: Any, report: CheckReport) -> None:
    """Note a server without a memory limit (``maxmemory 0``): a runaway writer then grows
    Redis until the machine swaps or kills it, where a limit refuses writes with
    ``OutOfMemory`` and nothing is lost. A note, not drift: nothing to repair here."""
    try:
        got = {as_str(k): as_str(v) for k, v in (await client.config_get("maxmemory")).items()}
    except (AccessDenied, ServerError):
        return  # a user that may not read the config
    if got.get("maxmemory", "0") == "0":
        report.notes.append(
            "Redis runs without a memory limit (maxmemory 0): set one with CONFIG SET "
            "maxmemory 1gb (and in redis.conf), or `blackboard server --maxmemory 1gb`")


async def check_scopes(
    client: Any, partitions: int, *, repair: bool, scopes: Iterable[str] | None
) -> CheckReport:
    """:meth:`Blackboard.check <blackboard.board.Blackboard.check>` on ``client``'s server
    of ``partitions`` partitions."""
    report = CheckReport(repaired=repair)
    await _check_maxmemory(client, report)
    if scopes is None:
        pairs = await _scope_ids(client, partitions, report, repair)
    else:
        pairs = [(validate_scope(s), K.partition_of(s, partitions)) for s in scopes]
    prefixes = [ScopeKeys(s, p).prefix for s, p in pairs]
    tally = new_tally()
    owned = await owned_before(client, partitions) if scopes is None else {}
    add = _drift_to(report)
    for sid, p in pairs:
        report.scopes += 1
        report.entries += await ScopeCheck(client, ScopeKeys(sid, p), add, repair, prefixes,
                                           tally).run()
    if scopes is None:  # the owners' totals and stray keys need every scope
        await check_owned(client, owned, tally, add, repair)
        stray = await check_invented(client, pairs, partitions, add, repair)
        for who, (n, size) in sorted(stray.items()):
            report.notes.append(f"{who} holds {n} key(s), {size} bytes, outside the key "
                                f"layout{' (deleted)' if repair else ''}")
    return report
