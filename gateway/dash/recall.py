"""Recall as the explorer shows it: the hits with every score component, and for the hard
filters of the query (tags, time range, key pattern, minimum strength) how many of the
candidates the unfiltered query ranks each one excluded."""

from __future__ import annotations

import fnmatch
from collections import OrderedDict
from typing import Any

from fastapi import FastAPI

from blackboard import BlackboardError
from memory import MemoryLevel, MemoryQuery, ScoredEntry, parse_scope
from memory.levels import level_named
from memory.response_bodies import Hit
from retrieval import Retriever

from ..caller import Caller
from .scopes import check_read, visible_scopes

__all__ = ["CANDIDATES", "close_retrievers", "explore"]

#: Candidates ranked without the hard filters, to count what each filter excluded.
CANDIDATES = 100
#: Retrievers kept (one per recently seen Redis user; each holds its index follower).
_KEEP = 32


def _retriever(app: FastAPI, caller: Caller) -> Retriever:
    cache: OrderedDict[str, tuple[Caller, Retriever]] = app.state.dash_retrievers
    got = cache.get(caller.principal)
    if got is not None and got[0] is caller:
        cache.move_to_end(caller.principal)
        return got[1]
    r = Retriever(caller.bb)
    cache[caller.principal] = (caller, r)
    return r


async def close_retrievers(app: FastAPI) -> None:
    cache: OrderedDict[str, tuple[Caller, Retriever]] = app.state.dash_retrievers
    while cache:
        _, (_, r) = cache.popitem()
        await r.aclose()


async def _trim(app: FastAPI) -> None:
    cache: OrderedDict[str, tuple[Caller, Retriever]] = app.state.dash_retrievers
    while len(cache) > _KEEP:
        _, (_, r) = cache.popitem(last=False)
        await r.aclose()


def _level_of(scope: str) -> MemoryLevel | None:
    try:
        return parse_scope(scope).level
    except BlackboardError:  # not a memory scope: no level
        return None


async def _scopes(caller: Caller, q: MemoryQuery) -> list[str]:
    if not caller.operator:
        return caller.memory.recall_scopes(q.scopes, q.levels)
    names = [check_read(caller, s) for s in q.scopes] if q.scopes else await visible_scopes(caller)
    if not q.levels:
        return names
    want = {level_named(x) for x in q.levels}
    return [s for s in names if _level_of(s) in want]


def _exclusions(q: MemoryQuery, cands: list[ScoredEntry]) -> dict[str, int]:
    tf = q.tag_filter
    out = {"tag_filter.all_of": 0, "tag_filter.any_of": 0, "tag_filter.none_of": 0,
           "time_range": 0, "key_pattern": 0, "min_strength": 0}
    for c in cands:
        e = c.entry
        if tf.all_of and not tf.all_of <= e.tags:
            out["tag_filter.all_of"] += 1
        if tf.any_of and not tf.any_of & e.tags:
            out["tag_filter.any_of"] += 1
        if tf.none_of and tf.none_of & e.tags:
            out["tag_filter.none_of"] += 1
        if q.time_range and not q.time_range[0] <= e.created_at <= q.time_range[1]:
            out["time_range"] += 1
        if q.key_pattern and not (e.key and fnmatch.fnmatchcase(e.key, q.key_pattern)):
            out["key_pattern"] += 1
        if q.min_strength is not None and c.strength < q.min_strength:
            out["min_strength"] += 1
    return out


async def explore(app: FastAPI, caller: Caller, q: MemoryQuery) -> dict[str, Any]:
    scopes = await _scopes(caller, q)
    r = _retriever(app, caller)
    hits = await r.recall(q, scopes) if scopes else []
    bare = MemoryQuery.model_validate({
        **q.model_dump(exclude={"lens", "tag_filter", "time_range", "key_pattern",
                                "min_strength"}),
        "max_results": max(CANDIDATES, q.max_results),
        "collapse": False})  # every form of a fact is a candidate the filters may exclude
    # Without text every entry is a candidate: exclusions are counted for text queries.
    cands = await r.recall(bare, scopes) if scopes and bare.query else None
    await _trim(app)
    return {"hits": [Hit.of(h).model_dump() for h in hits], "scopes": scopes,
            "candidates": None if cands is None else len(cands),
            "excluded": _exclusions(q, cands or [])}
