"""Beliefs and skills: the semantic facts (grouped by canonical key into a supersession
chain, evidence resolved to readable entries) and procedures of the caller's scopes."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from blackboard import BlackboardError, Entry
from memory import MemoryLevel, parse_scope
from retrieval.truth import belief_key, belief_valid_from, belief_valid_to

from ..caller import Caller
from .scopes import find_entries, owner_first, visible_scopes

__all__ = ["LIMIT", "beliefs"]

#: Entries read per semantic or procedural scope (newest first).
LIMIT = 1000


def _level_scopes(scopes: list[str], level: MemoryLevel) -> list[str]:
    out = []
    for s in scopes:
        try:
            if parse_scope(s).level is level:
                out.append(s)
        except BlackboardError:  # a scope outside the memory grammar has no level
            continue
    return out


def _superseded(e: Entry) -> bool:
    # The write script marks the replaced entry (key_mode "supersede"): its superseded_by
    # field and tag; the value keeps the status it was drafted with.
    return bool(e.superseded_by) or "superseded" in e.tags


def _fact_row(e: Entry) -> dict[str, Any]:
    v = e.value if isinstance(e.value, dict) else {}
    m = e.metadata
    status = "superseded" if _superseded(e) else m.get("status") or v.get("status", "active")
    return {"id": e.id, "created_at": e.created_at,
            "statement": v.get("statement") or e.text[:200],
            "status": status,
            "revision": v.get("revision", ""), "confidence": v.get("confidence"),
            "confidence_components": v.get("confidence_components", {}),
            "evidence": list(v.get("evidence", [])), "superseded_by": e.superseded_by,
            "valid_from": belief_valid_from(e), "valid_to": belief_valid_to(e)}


def _current(es: list[Entry], at_ms: int | None) -> Entry | None:
    """The chain's (oldest first) current version, or the one valid at ``at_ms``
    (:mod:`retrieval.truth`); None: none was valid then."""
    if at_ms is None:
        return next((x for x in reversed(es) if not _superseded(x)), es[-1])
    then = [x for x in es if belief_valid_from(x) <= at_ms]
    if not then:
        return None
    pick = max(then, key=lambda x: (belief_valid_from(x), x.created_at))
    end = belief_valid_to(pick)
    return pick if end is None or at_ms < end else None


async def _facts(caller: Caller, scopes: list[str], visible: list[str],
                 at_ms: int | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for s in scopes:
        chains: dict[str, list[Entry]] = defaultdict(list)
        for e in await caller.bb.scope(s).entries(all_of=["fact"], limit=LIMIT):
            chains[belief_key(e)].append(e)  # a version under an older key form too
        for es in chains.values():
            es.sort(key=lambda x: (x.created_at, x.id))
            current = _current(es, at_ms)
            if current is None:
                continue
            key = str(current.metadata.get("canonical_key") or current.key or current.id)
            row = _fact_row(current)
            evidence: list[dict[str, Any]] = [ev for ev in row["evidence"]
                                              if isinstance(ev, dict) and "entry" in ev]
            found = await find_entries(caller, [str(ev["entry"]) for ev in evidence],
                                       owner_first(s, visible))
            for ev in evidence:
                hit = found.get(str(ev["entry"]))
                if hit is not None:
                    ev["scope"], ev["text"] = hit.scope, hit.text[:200]
            out.append({"key": key, "scope": s, "current": row,
                        "chain": [_fact_row(x) for x in es]})
    out.sort(key=lambda f: (-(f["current"]["confidence"] or 0), f["key"]))
    return out


async def _procedures(caller: Caller, scopes: list[str]) -> list[dict[str, Any]]:
    latest: dict[tuple[str, str], Entry] = {}
    for s in scopes:
        for e in await caller.bb.scope(s).entries(limit=LIMIT):
            if not isinstance(e.value, dict) or "steps" not in e.value or _superseded(e):
                continue  # not a procedure, or an older version of one
            key = (s, str(e.metadata.get("canonical_key") or e.key or e.id))
            if key not in latest or latest[key].created_at < e.created_at:
                latest[key] = e
    out = []
    for (s, name), e in latest.items():
        v = e.value
        out.append({"id": e.id, "scope": s, "key": name, "task_kind": v.get("task_kind"),
                    "name": v.get("name"), "description": v.get("description"),
                    "steps": list(v.get("steps", [])), "support": v.get("support", 0),
                    "successes": v.get("successes", 0), "failures": v.get("failures", 0),
                    "success_rate": v.get("success_rate"),
                    "procedure_version": v.get("procedure_version", 1),
                    "created_at": e.created_at})
    out.sort(key=lambda p: (-p["support"], p["key"]))
    return out


async def beliefs(caller: Caller, as_of: datetime | None = None) -> dict[str, Any]:
    """Facts (each ``current`` as it stood at ``as_of`` when given) and procedures."""
    visible = await visible_scopes(caller)
    at_ms = None if as_of is None else int(as_of.timestamp() * 1000)
    return {
        "facts": await _facts(caller, _level_scopes(visible, MemoryLevel.SEMANTIC), visible,
                              at_ms),
        "procedures": await _procedures(caller, _level_scopes(visible, MemoryLevel.PROCEDURAL)),
    }
