"""One entry as the inspector shows it: the entry, its scope's decay policy and curve, and
its provenance both ways (the entries it derives from, the entries derived from it)."""

from __future__ import annotations

from typing import Any

from blackboard import Entry
from blackboard.decay import evict_time, strength_at
from memory.response_bodies import EntryOut

from ..caller import Caller
from .scopes import check_read, edges, find_entries, owner_first, visible_scopes

__all__ = ["CURVE_POINTS", "DERIVED_SCAN", "entry_detail", "scope_entries"]

#: Points of the decay curve drawn by the inspector.
CURVE_POINTS = 48
#: Newest entries of each target scope searched for entries derived from this one: no
#: index maps a source to its derivatives, so the search is bounded.
DERIVED_SCAN = 500


async def scope_entries(caller: Caller, scope: str, limit: int) -> list[EntryOut]:
    """The newest ``limit`` entries of a readable scope."""
    check_read(caller, scope)
    return [EntryOut.of(e) for e in await caller.bb.scope(scope).entries(limit=limit)]


def _curve(e: Entry, rate: float, tick_ms: int, threshold: float, now: int) -> list[list[float]]:
    start = e.strength_at or e.created_at
    if rate <= 0:
        return [[start, e.strength], [max(now, start + 1), e.strength]]
    # Down to the eviction threshold, or 400 ticks when reinforcement keeps it above.
    end = min(evict_time(e.strength, start, threshold, rate, e.reinforcements, tick_ms),
              start + 400.0 * tick_ms)
    end = max(end, float(now))
    step = max(1.0, (end - start) / (CURVE_POINTS - 1))
    return [[start + i * step, strength_at(e.strength, start, int(start + i * step), rate,
                                           e.reinforcements, tick_ms)]
            for i in range(CURVE_POINTS)]


def _link(e: Entry | None, entry_id: str) -> dict[str, Any]:
    if e is None:
        return {"id": entry_id, "missing": True}
    prov = e.metadata.get("provenance") if isinstance(e.metadata, dict) else None
    p = prov if isinstance(prov, dict) else {}
    return {"id": e.id, "scope": e.scope, "text": e.text[:300], "missing": False,
            "raw": not sources_of(e),
            "transformer": p.get("transformer"), "transformer_version": p.get("version")}


def merged_of(e: Entry) -> list[str]:
    """The duplicates dedupe merged into ``e`` (and deleted): copies, not its origin."""
    got = e.metadata.get("merged_from")
    return [str(x) for x in got] if isinstance(got, list) else []


def sources_of(e: Entry) -> list[str]:
    """The ids ``e`` derives from: its ``source`` and its provenance's sources, but not
    the duplicates merged into it (dedupe adds those to ``source``)."""
    prov = e.metadata.get("provenance")
    more = prov.get("sources", []) if isinstance(prov, dict) else []
    merged = set(merged_of(e))
    return [i for i in dict.fromkeys([*e.source, *(str(x) for x in more)]) if i not in merged]


async def entry_detail(caller: Caller, scope: str, entry_id: str) -> dict[str, Any]:
    check_read(caller, scope)
    sc = caller.bb.scope(scope)
    e = await sc.get(entry_id)
    policy = await sc.policy()
    now = caller.bb.now_ms()
    tick_ms = int(policy.decay_tick * 1000)
    visible = await visible_scopes(caller)
    src_ids = sources_of(e)
    found = await find_entries(caller, src_ids, owner_first(scope, visible)) if src_ids else {}
    targets = {t for edge in await edges(caller) if (t := edge.match(scope)) and t in visible}
    derived: list[Entry] = []
    for t in sorted(targets):
        for d in await caller.bb.scope(t).entries(limit=DERIVED_SCAN):
            if entry_id in sources_of(d):
                derived.append(d)
    prov = e.metadata.get("provenance")
    return {
        "entry": EntryOut.of(e).model_dump(),
        "now": now,
        "policy": {"decay_rate": policy.decay_rate, "decay_tick": policy.decay_tick,
                   "evict_threshold": policy.evict_threshold, "ttl": policy.ttl,
                   "max_entries": policy.max_entries},
        "strength_now": strength_at(e.strength, e.strength_at or e.created_at, now,
                                    policy.decay_rate, e.reinforcements, tick_ms),
        "curve": _curve(e, policy.decay_rate, tick_ms, policy.evict_threshold, now),
        "provenance": prov if isinstance(prov, dict) else None,
        "sources": [_link(found.get(i), i) for i in src_ids],
        "merged": merged_of(e),
        "derived": [_link(d, d.id) for d in sorted(derived, key=lambda d: d.created_at)],
        "derived_scopes": sorted(targets),
    }
