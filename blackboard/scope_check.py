"""``blackboard check``'s part for one scope: :class:`ScopeCheck` verifies (and with
``repair`` rewrites) a scope's indexes against its entry hashes, the source of truth.

It holds what :mod:`blackboard.check` runs once per scope: the index key types, the feed's
room for new ids, the ``removed`` counters, entries without their event and retired entries
missing from ``retired``, then ``ix``, ``exp``, ``evict``, the tag sets and ``tags``
counters, the ``keys`` hash and the partition's ``scopes`` / ``ttl`` / ``prune`` entries
for the scope (its quota counters are :mod:`blackboard.quota_check`'s). Apart from the
report and the walk over every scope (:mod:`blackboard.check`), so each module stays under
~400 lines; like the quota checks, it reports each difference through a ``DriftFn``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from .codec import as_str
from .ids import is_entry_id
from .keys import ScopeKeys
from .pool_stats import REMOVAL_REASONS
from .quota_check import DriftFn, Tally, check_scope_usage, new_tally, read_counters

__all__ = ["ScopeCheck"]

#: A stream id whose milliseconds are at the maximum leaves XADD '*' no room.
_MAX_MS = "18446744073709551615-"


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


class ScopeCheck:
    """One scope's checks: :meth:`run` reports each difference to ``add`` (a ``DriftFn``:
    ``(scope, index, member, problem, harmless=False)``) and, with ``repair``, mends it."""

    def __init__(self, client: Any, sk: ScopeKeys, add: DriftFn, repair: bool,
                 nested: Iterable[str] = (), tally: Tally | None = None) -> None:
        self.c, self.sk, self.add, self.repair = client, sk, add, repair
        self.tally = tally if tally is not None else new_tally()
        # Prefixes of other scopes of this partition that start with this scope's prefix
        # (``a:tag`` under ``a``): their keys also match our SCAN patterns.
        self.nested = tuple(n for n in nested if n != sk.prefix and n.startswith(sk.prefix))

    def drift(self, index: str, member: str, problem: str, harmless: bool = False) -> None:
        self.add(self.sk.scope_id, index, member, problem, harmless)

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

    async def run(self) -> int:
        """Check the scope; -> how many live entries it holds (0 while unreadable)."""
        sk, c = self.sk, self.c
        if not await self.check_types():
            return 0  # the other indexes are checked once the repair made them readable
        usage_before = await read_counters(c, sk.usage, ("bytes",))
        every = await self.entries()
        ents = {i: h for i, h in every.items() if "retired" not in h}
        await self.check_events(ents, {i: h for i, h in every.items() if "retired" in h})
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
        await check_scope_usage(c, sk, ents, self.add, self.repair, self.tally, usage_before)
        return len(ents)

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
