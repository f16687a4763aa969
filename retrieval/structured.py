"""The structured retriever: tag, time and key queries answered straight from the scopes'
Redis indexes, newest first, with no text index, embedder or follower.

It serves ``MemoryQuery(order="newest")`` (see :class:`memory.Retriever`): the hits carry
the entry's current strength, recency and importance; ``dense``/``bm25`` are None and
``fused`` 0 (no text was ranked), and ``score`` is the recency, the key the list is ordered
by (newest first, ties by id).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from blackboard import Blackboard, Entry

from .citations import cite
from .completeness import RecallHits, RouteReport
from .query import MemoryQuery
from .scoring import ScoredEntry, ScoringConfig, entry_strength, recency

__all__ = ["StructuredRetriever"]

log = logging.getLogger(__name__)


class StructuredRetriever:
    """Entries of the given scopes matching a query's filters, merged newest first.

    ``config`` gives the recency half-life of the hits' ``recency`` (and ``score``).
    """

    def __init__(self, bb: Blackboard, config: ScoringConfig | None = None) -> None:
        self.bb = bb
        self.config = config or ScoringConfig()

    async def recall(self, q: MemoryQuery, scopes: Sequence[str]) -> list[ScoredEntry]:
        """At most ``q.max_results`` entries of ``scopes`` matching ``q``'s tag, time and key
        filters, newest first (ties by id). The caller has checked access to ``scopes``."""
        names = list(dict.fromkeys(scopes))
        per_scope = await asyncio.gather(*(self._scope_hits(q, s) for s in names))
        hits = [h for batch in per_scope for h in batch]
        hits.sort(key=lambda h: (h.entry.created_at, h.entry.id), reverse=True)
        hits = cite(hits[: q.max_results])
        if q.explain:
            for h in hits:
                log.info("recall (newest first): %s", h.explain())
        return RecallHits(hits, route=RouteReport(intent=q.intent, route="newest"))

    async def _scope_hits(self, q: MemoryQuery, scope_id: str) -> list[ScoredEntry]:
        entries, policy = await asyncio.gather(self._entries(q, scope_id),
                                               self.bb.scope(scope_id).policy())
        now = self.bb.now_ms()
        tick_ms = int(policy.decay_tick * 1000)
        recs = recency([e.created_at for e in entries], now, self.config.recency_half_life_ms)
        return [
            ScoredEntry(
                entry=e, scope=scope_id, dense=None, bm25=None, fused=0.0,
                strength=entry_strength(e, now, policy.decay_rate, tick_ms),
                recency=float(r), importance=e.importance, score=float(r),
            )
            for e, r in zip(entries, recs, strict=True)
        ]

    async def _entries(self, q: MemoryQuery, scope_id: str) -> list[Entry]:
        scope = self.bb.scope(scope_id)
        lo, hi = q.time_range if q.time_range is not None else (None, None)
        tf = q.tag_filter
        if q.key_pattern is None:
            return await scope.entries(
                all_of=tf.all_of, any_of=tf.any_of, none_of=tf.none_of, start_ms=lo,
                end_ms=hi, limit=q.max_results, newest_first=True,
            )
        # A key glob has no ordered index: every entry whose key matches, then the filters.
        got = await scope.get_many(await scope.ids_by_key_glob(q.key_pattern))
        return [
            e for e in got
            if e is not None and (lo is None or lo <= e.created_at)
            and (hi is None or e.created_at <= hi) and tf.matches(e.tags)
        ]

    async def aclose(self) -> None:
        """Nothing to release (it holds no index); here for :class:`memory.Retriever`."""
