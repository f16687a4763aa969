"""Recall without the retrieval layer: tag, time and key queries over the indexes.

Serves structured queries only; free text needs a retriever (see :mod:`memory.agent`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from blackboard import Blackboard, Entry, InvalidArgument
from blackboard.validation import validate_scope, validate_tags

from .levels import MemoryLevel
from .naming import parse_scope
from .subscriptions import TagMatch

__all__ = ["BasicQuery", "recall_basic", "select_scopes"]


@dataclass(frozen=True, slots=True)
class BasicQuery:
    """A structured query. Tags: ``all_of``/``any_of``/``none_of``; ``start_ms``/``end_ms``:
    created_at range (ms since the epoch, inclusive); ``key_glob``: Redis glob over logical
    keys (entries without a key never match); ``levels``/``scopes`` narrow the scopes
    searched (empty: all readable); ``limit``: most entries returned, newest first."""

    all_of: frozenset[str] = frozenset()
    any_of: frozenset[str] = frozenset()
    none_of: frozenset[str] = frozenset()
    start_ms: int | None = None
    end_ms: int | None = None
    key_glob: str | None = None
    levels: frozenset[MemoryLevel] = frozenset()
    scopes: tuple[str, ...] = field(default_factory=tuple)
    limit: int = 20

    def __post_init__(self) -> None:
        for name in ("all_of", "any_of", "none_of"):
            object.__setattr__(self, name, frozenset(validate_tags(getattr(self, name))))
        object.__setattr__(self, "levels", frozenset(MemoryLevel(x) for x in self.levels))
        object.__setattr__(self, "scopes", tuple(validate_scope(s) for s in self.scopes))
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            raise InvalidArgument(f"limit must be a positive int, got {self.limit!r}")
        if self.key_glob is not None and (not isinstance(self.key_glob, str) or not self.key_glob):
            raise InvalidArgument("key_glob must be a non-empty str")

    @property
    def tags(self) -> TagMatch:
        return TagMatch(self.all_of, self.any_of, self.none_of)


def select_scopes(readable: Iterable[str], q: BasicQuery) -> list[str]:
    """The scopes a query searches among the readable ones (its scopes/levels filters)."""
    out = []
    for s in readable:
        if q.scopes and s not in q.scopes:
            continue
        if q.levels:
            try:
                level = parse_scope(s).level
            except InvalidArgument:
                continue
            if level not in q.levels:
                continue
        out.append(s)
    return out


async def _by_key(bb: Blackboard, scope_id: str, q: BasicQuery) -> list[Entry]:
    scope = bb.scope(scope_id)
    ids = [v.decode() async for _k, v in bb.client.hscan_iter(scope.keys.keys, match=q.key_glob)]
    lo = q.start_ms if q.start_ms is not None else -1
    hi = q.end_ms if q.end_ms is not None else 1 << 62
    tm = q.tags
    got = await scope.get_many(ids)
    return [e for e in got if e is not None and lo <= e.created_at <= hi and tm.matches(e.tags)]


async def _one(bb: Blackboard, scope_id: str, q: BasicQuery) -> list[Entry]:
    if q.key_glob is not None:
        return await _by_key(bb, scope_id, q)
    return await bb.scope(scope_id).entries(
        all_of=q.all_of, any_of=q.any_of, none_of=q.none_of, start_ms=q.start_ms,
        end_ms=q.end_ms, limit=q.limit, newest_first=True,
    )


async def recall_basic(bb: Blackboard, scope_ids: Sequence[str], q: BasicQuery) -> list[Entry]:
    """Entries of ``scope_ids`` matching ``q``, merged newest first (ties by id), at most
    ``q.limit``. The caller has checked access to ``scope_ids``."""
    per_scope = await asyncio.gather(*(_one(bb, s, q) for s in scope_ids))
    merged = [e for batch in per_scope for e in batch]
    merged.sort(key=lambda e: (e.created_at, e.id), reverse=True)
    return merged[: q.limit]
