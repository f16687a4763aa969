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
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from . import keys as K
from .codec import as_str
from .errors import AccessDenied, InvalidArgument, ServerError
from .ids import is_entry_id
from .keys import PartitionKeys, ScopeKeys
from .pool_stats import REMOVAL_REASONS
from .quota_check import (
    Tally,
    check_invented,
    check_owned,
    check_scope_usage,
    new_tally,
    owned_before,
    read_counters,
)
from .validation import validate_scope

__all__ = ["CheckReport", "Drift", "check_scopes"]

#: A stream id whose milliseconds are at the maximum leaves XADD '*' no room.
_MAX_MS = "18446744073709551615-"


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


def _s(v: Any) -> str:
    # "replace": drift is whatever is in Redis, bytes written by hand included; the report
    # names them rather than failing on them.
    return as_str(v, "replace")


def _num(v: Any, default: float = 0.0) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return default


def _evict_score(cfg: dict[str, str], s: float, s_at: float, k: int) -> float:
    """Python twin of ``evict_score`` in ``scripts/_lib.lua`` (used to repair ``evict``)."""
    rate = _num(cfg.get("decay_rate"))
    tick = _num(cfg.get("decay_tick_ms"), 3_600_000)
    thr = _num(cfg.get("evict_threshold"), 0.1)
    if rate <= 0:
        return s
    if s <= thr:
        return s_at
    q = 1 - rate / (1 + math.log(1 + k))
    if q <= 0:
        return s_at
    if q >= 1:
        return 9007199254740991
    return s_at + math.floor(tick * math.log(thr / s) / math.log(q) + 0.5)


class _ScopeCheck:
    def __init__(self, client: Any, sk: ScopeKeys, report: CheckReport, repair: bool,
                 nested: Iterable[str] = (), tally: Tally | None = None) -> None:
        self.c, self.sk, self.report, self.repair = client, sk, report, repair
        self.tally = tally if tally is not None else new_tally()
        # Prefixes of other scopes of this partition that start with this scope's prefix
        # (``a:tag`` under ``a``): their keys also match our SCAN patterns.
        self.nested = tuple(n for n in nested if n != sk.prefix and n.startswith(sk.prefix))

    def drift(self, index: str, member: str, problem: str, harmless: bool = False) -> None:
        self.report.drift.append(Drift(self.sk.scope_id, index, member, problem, harmless))

    async def entries(self) -> dict[str, dict[str, str]]:
        pre = self.sk.entry("")
        out: dict[str, dict[str, str]] = {}
        async for raw in self.c.scan_iter(match=pre + "*", count=1000, _type="hash"):
            key = _s(raw)
            eid = key[len(pre):]
            if not is_entry_id(eid):
                continue  # a key of a nested scope (``<scope>:e:...``), not an entry
            h = {_s(a): _s(b) for a, b in (await self.c.hgetall(key)).items()}
            if h.get("scope") == self.sk.scope_id and h.get("id") == eid and "version" in h:
                out[eid] = h
        return out

    async def zset(self, key: str) -> dict[str, float]:
        return {_s(m): float(s) for m, s in await self.c.zrange(key, 0, -1, withscores=True)}

    async def check_types(self) -> bool:
        """Index keys of the wrong type (every script on the scope fails on them); -> whether
        the scope's indexes can be read (all of the right type, or just repaired)."""
        sk, c = self.sk, self.c
        want = {sk.ix: "zset", sk.tags: "hash", sk.keys: "hash", sk.exp: "zset",
                sk.evict: "zset", sk.feed: "stream", sk.removed: "hash"}
        async for raw in c.scan_iter(match=sk.tag_set("") + "*", count=1000):
            if not _s(raw).startswith(self.nested):
                want[_s(raw)] = "set"
        readable = True
        for key, typ in want.items():
            got = _s(await c.type(key))
            if got not in ("none", typ):
                self.drift("type", key, f"holds a {got}, not a {typ}")
                readable = self.repair
                if self.repair:
                    await c.delete(key)  # rebuilt from the entries below
        await self.check_removed()
        if _s(await c.type(sk.feed)) == "stream":
            info = await c.xinfo_stream(sk.feed)
            if _s(info.get("last-generated-id", "0-0")).startswith(_MAX_MS):
                self.drift("feed", sk.feed, "no room for new ids (last id at the maximum)")
                if self.repair:
                    await c.delete(sk.feed)  # observers re-read the scope from its entries
        return readable

    async def check_removed(self) -> None:
        """Pool counters the scripts could not HINCRBY (written by hand): reset to 0."""
        if _s(await self.c.type(self.sk.removed)) != "hash":
            return
        got = await self.c.hmget(self.sk.removed, list(REMOVAL_REASONS))
        for reason, v in zip(REMOVAL_REASONS, got, strict=True):
            if v is not None and (not _s(v).lstrip("-").isdigit() or len(_s(v)) > 15):
                self.drift("removed", reason, "unreadable counter")
                if self.repair:
                    await self.c.hset(self.sk.removed, reason, 0)

    async def check_events(self, ents: dict[str, dict[str, str]],
                           retired: dict[str, dict[str, str]]) -> None:
        """Entries without their event, and retired entries missing from ``retired``."""
        sk, c = self.sk, self.c
        for i, h in ents.items():
            if h.get("event_id"):
                continue
            self.drift("event", i, "entry without its event: never reaches observers or "
                       "the dataflow")
            if self.repair:
                await self.publish(i, h)
        members = {f"{sk.scope_id}|{i}" for i in retired}
        if members:
            have = await c.smismember(sk.part.retired, list(members))
            for m, ok in zip(members, have, strict=True):
                if not ok:
                    self.drift("retired", m, "retired entry not listed: never reaped")
                    if self.repair:
                        await c.sadd(sk.part.retired, m)

    async def publish(self, i: str, h: dict[str, str]) -> None:
        """Publish an entry's missing event the way the write script does: the feed event,
        the inbox item and ``cver`` in one transaction, then the event id on the entry (a
        crash between makes the next check publish again; the relay drops the repeat)."""
        sk, v = self.sk, h.get("version", "1")
        async with self.c.pipeline(transaction=True) as pipe:
            pipe.xadd(sk.feed, {"scope": sk.scope_id, "type": "written", "entry": i,
                                "version": v, "tags": h.get("tags", "[]"),
                                "at": h.get("updated_at", "0")})
            pipe.rpush(sk.part.inbox, f"{sk.scope_id}|{i}|{v}")
            pipe.hset(sk.entry(i), "cver", v)
            ev, *_ = await pipe.execute()
        await self.c.hset(sk.entry(i), mapping={"event_id": _s(ev), "last_event_id": _s(ev)})

    async def run(self) -> None:
        sk, c = self.sk, self.c
        if not await self.check_types():
            return  # the other indexes are checked once the repair made them readable
        usage_before = await read_counters(c, sk.usage, ("bytes",))
        every = await self.entries()
        ents = {i: h for i, h in every.items() if "retired" not in h}
        await self.check_events(ents, {i: h for i, h in every.items() if "retired" in h})
        self.report.entries += len(ents)
        cfg = {_s(a): _s(b) for a, b in (await c.hgetall(sk.cfg)).items()}
        # ix: every entry, scored by created_at
        want_ix = {i: _num(h.get("created_at")) for i, h in ents.items()}
        await self.sync_zset("ix", sk.ix, await self.zset(sk.ix), want_ix, exact=True)
        # exp: entries with an expiry
        want_exp = {i: _num(h.get("expires_at")) for i, h in ents.items()
                    if _num(h.get("expires_at")) > 0}
        have_exp = await self.zset(sk.exp)
        await self.sync_zset("exp", sk.exp, have_exp, want_exp, exact=True)
        # evict: every entry (its score moves with decay and reinforcement: membership only)
        have_ev = await self.zset(sk.evict)
        want_ev = {i: have_ev[i] if i in have_ev else _evict_score(
            cfg, _num(h.get("strength"), 1.0), _num(h.get("strength_at")),
            int(_num(h.get("reinforcements")))) for i, h in ents.items()}
        await self.sync_zset("evict", sk.evict, have_ev, want_ev, exact=False)
        await self.check_tags(ents)
        await self.check_keys(ents)
        await self.check_partition(ents, want_exp, want_ev, cfg)
        await check_scope_usage(c, sk, ents, _drift_to(self.report), self.repair, self.tally,
                                usage_before)

    async def sync_zset(self, name: str, key: str, have: dict[str, float],
                        want: dict[str, float], *, exact: bool) -> None:
        add = {m: s for m, s in want.items()
               if m not in have or (exact and have[m] != s)}
        rem = [m for m in have if m not in want]
        for m in add:
            self.drift(name, m, "missing" if m not in have else "wrong score")
        for m in rem:
            self.drift(name, m, "no such entry")
        if self.repair:
            if add:
                await self.c.zadd(key, add)
            if rem:
                await self.c.zrem(key, *rem)

    async def check_tags(self, ents: dict[str, dict[str, str]]) -> None:
        sk, c = self.sk, self.c
        want: dict[str, set[str]] = {}
        for i, h in ents.items():
            try:
                tags = json.loads(h.get("tags") or "[]")
            except ValueError:
                tags = []
            for t in tags:
                want.setdefault(str(t), set()).add(i)
        counts = {_s(a): int(_num(b)) for a, b in (await c.hgetall(sk.tags)).items()}
        pre = sk.tag_set("")
        have_sets = set()
        async for raw in c.scan_iter(match=pre + "*", count=1000, _type="set"):
            if not _s(raw).startswith(self.nested):
                have_sets.add(_s(raw)[len(pre):])
        for t in sorted(set(want) | set(counts) | have_sets):
            members = {_s(m) for m in await c.smembers(sk.tag_set(t))}
            w = want.get(t, set())
            if members != w:
                self.drift("tag_set", t, f"{len(members - w)} extra, {len(w - members)} missing")
                if self.repair:
                    if members - w:
                        await c.srem(sk.tag_set(t), *(members - w))
                    if w - members:
                        await c.sadd(sk.tag_set(t), *(w - members))
            if counts.get(t, 0) != len(w):
                self.drift("tags", t, f"counter {counts.get(t, 0)}, entries {len(w)}")
                if self.repair:
                    if w:
                        await c.hset(sk.tags, t, len(w))
                    else:
                        await c.hdel(sk.tags, t)

    async def check_keys(self, ents: dict[str, dict[str, str]]) -> None:
        sk, c = self.sk, self.c
        holders: dict[str, list[tuple[float, str]]] = {}
        for i, h in ents.items():
            if h.get("key") and not h.get("superseded_by"):
                holders.setdefault(h["key"], []).append((_num(h.get("created_at")), i))
        want = {k: max(v)[1] for k, v in holders.items()}
        have = {_s(a): _s(b) for a, b in (await c.hgetall(sk.keys)).items()}
        for k, i in have.items():
            if k not in want and not (i in ents and ents[i].get("key") == k):
                self.drift("keys", k, f"points at {i}, which does not hold it")
                if self.repair:
                    await c.hdel(sk.keys, k)
        for k, i in want.items():
            if k not in have:
                self.drift("keys", k, "missing")
                if self.repair:
                    await c.hset(sk.keys, k, i)

    async def check_partition(self, ents: dict[str, dict[str, str]], exp: dict[str, float],
                              ev: dict[str, float], cfg: dict[str, str]) -> None:
        sk, c, p = self.sk, self.c, self.sk.part
        sid = sk.scope_id
        if ents and not await c.sismember(p.scopes, sid):
            self.drift("scopes", sid, "missing")
            if self.repair:
                await c.sadd(p.scopes, sid)
        await self.schedule("ttl", p.ttl, min(exp.values()) if exp else None)
        due = min(ev.values()) if ev and _num(cfg.get("decay_rate")) > 0 else None
        await self.schedule("prune", p.prune, due)

    async def schedule(self, name: str, key: str, due: float | None) -> None:
        sid = self.sk.scope_id
        got = await self.c.zscore(key, sid)
        if due is None:
            if got is not None:  # an extra visit of the sweep, nothing lost
                self.drift(name, sid, "scheduled with nothing due", harmless=True)
                if self.repair:
                    await self.c.zrem(key, sid)
            return
        if got is None or got > due:
            self.drift(name, sid, "missing" if got is None else f"late ({got} > {due})")
        elif got < due:
            self.drift(name, sid, "early", harmless=True)
        else:
            return
        if self.repair:
            await self.c.zadd(key, {sid: due})


def _drift_to(report: CheckReport) -> Any:
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
            sid = _s(raw)
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
    for sid, p in pairs:
        report.scopes += 1
        await _ScopeCheck(client, ScopeKeys(sid, p), report, repair, prefixes, tally).run()
    if scopes is None:  # the owners' totals and stray keys need every scope
        await check_owned(client, owned, tally, _drift_to(report), repair)
        stray = await check_invented(client, pairs, partitions, _drift_to(report), repair)
        for who, (n, size) in sorted(stray.items()):
            report.notes.append(f"{who} holds {n} key(s), {size} bytes, outside the key "
                                f"layout{' (deleted)' if repair else ''}")
    return report
