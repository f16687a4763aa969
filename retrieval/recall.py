"""The retriever behind ``AgentMemory.recall``: a :class:`SearchEngine` kept in sync with
Redis by an :class:`IndexFollower`, searched with read-your-writes.

It implements :class:`memory.Retriever`: ``await retriever.recall(query, scopes)`` with
the scopes already resolved and access-checked by the caller (the memory layer owns access
rules and level names); hits of every scope come back in one ranking, so their scores are
comparable. Text may be given directly (``recall("text", scopes)``): it becomes a
:class:`MemoryQuery` here; AgentMemory passes one ready-made.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from blackboard import Blackboard, tracing

from .collapse import collapse
from .completeness import RecallHits, wait_embedded
from .embedders.base import Embedder
from .engine import SearchEngine
from .follower import IndexFollower
from .goal import GOAL_DEPTH, blend_goal
from .query import MemoryQuery, as_query
from .rewrite import QueryRewriter, fuse_rankings
from .scoring import ScoredEntry, ScoringConfig
from .truth import current_truth, truth_filter
from .updates import latest_first, pull_updates
from .utility import by_utility

__all__ = ["Retriever"]

log = logging.getLogger(__name__)


#: A collapsing recall ranks this many candidates per hit asked for, so that ``k`` hits
#: remain once the derived forms of each fact have folded into one (and, when they did not,
#: four times as many once more).
DEPTH_PER_HIT = 3


class Retriever:
    """Hybrid recall over Redis scopes.

    ``embedder``: ``"default"`` (MiniLM when installed; otherwise BM25 plus filters, with one
    warning per process), an :class:`Embedder`, or None (BM25 only). ``engine`` replaces
    the engine made from ``embedder``/``config``. ``wait_timeout``: at most this long a
    query waits for writes acknowledged before it (then it searches anyway and logs).
    ``snapshot_dir``: load the index from / save it to this directory. ``rewriter``
    (optional, e.g. :class:`~retrieval.rewrite.LLMQueryRewriter`): text queries are also
    searched in its rewrites, the rankings fused (:func:`~retrieval.rewrite.fuse_rankings`).
    ``semantic_timeout``: at most this long a ``consistency="semantic"`` query waits for its
    scopes' vectors (then :class:`~retrieval.completeness.EmbeddingBacklog`).
    ``background_embed``: see :class:`~retrieval.follower.IndexFollower` (off for a one-shot
    process such as ``blackboard recall``).
    """

    def __init__(
        self,
        bb: Blackboard,
        *,
        embedder: Embedder | Literal["default"] | None = "default",
        config: ScoringConfig | None = None,
        engine: SearchEngine | None = None,
        wait_timeout: float = 2.0,
        snapshot_dir: str | Path | None = None,
        block_ms: int = 1000,
        write_back: bool = True,
        rewriter: QueryRewriter | None = None,
        semantic_timeout: float = 30.0,
        background_embed: bool = True,
    ) -> None:
        self.bb = bb
        self.semantic_timeout = semantic_timeout
        self.rewriter = rewriter
        self.engine = engine if engine is not None else SearchEngine(embedder, config)
        self.wait_timeout = wait_timeout
        self._follower_args: dict[str, Any] = {
            "snapshot_dir": snapshot_dir, "block_ms": block_ms, "write_back": write_back,
            "background_embed": background_embed,
        }
        self._follower: IndexFollower | None = None

    @property
    def follower(self) -> IndexFollower:
        """The follower (created on first use: it needs a running loop)."""
        if self._follower is None:
            self._follower = IndexFollower(self.bb, self.engine, **self._follower_args)
        return self._follower

    async def recall(
        self, q: MemoryQuery | str, scopes: Sequence[str] | None = None, *,
        limit: int | None = None, explain: bool = False,
    ) -> RecallHits:
        """The best hits for ``q`` (a query, or text) in ``scopes`` (default: the query's
        ``scopes``), best first, each saying whether it had its vector, with the count of
        entries still waiting for one (:class:`~retrieval.completeness.RecallHits`). Sees
        every write acknowledged before the call (bounded wait)."""
        q = as_query(q, limit, explain)
        names = list(dict.fromkeys(scopes if scopes is not None else q.scopes or ()))
        if not names:
            return RecallHits()
        if tracing.ENABLED:  # the query's text is not recorded: it is the user's data
            with tracing.span("retrieval.recall", {
                "retrieval.scopes": len(names), "retrieval.max_results": q.max_results,
                "retrieval.consistency": q.consistency,
            }) as sp:
                out = await self._recall(q, names)
                sp.set_attribute("retrieval.hits", len(out))
                sp.set_attribute("retrieval.dense_pending", out.dense_pending)
                return out
        return await self._recall(q, names)

    async def _recall(self, q: MemoryQuery, names: list[str]) -> RecallHits:
        rewrites = await self.rewriter(q.query) if self.rewriter and q.query else []
        fol = self.follower
        await fol.follow(names)
        if q.consistency == "semantic":
            # every write acknowledged before the call indexed, then embedded: the search
            # below then ranks them all by meaning (a vector arriving during a search must
            # not make that search's ranking pass for a complete one)
            await fol.sync(names, self.wait_timeout)
            await self._embedded(names)
        # A small batch being embedded: wait for it here, off the loop, not in the search.
        await fol.settled(self.engine.inline_embed)
        # Read-your-writes without paying the round trip on top of the search: ask Redis for
        # every scope's newest feed id, search while the reply travels, then check that the
        # search saw at least those ids; if not, catch up and search again.
        seen = fol.positions(names)
        hits, ids = await self.bb.feed_probe.around(names, lambda: self._search(q, names))
        if fol.behind(ids, seen):
            with tracing.stage("retrieval.catch_up"):
                await fol.catch_up_to(ids, self.wait_timeout)
            hits = self._search(q, names)
        if q.consistency == "semantic" and self.engine.unembedded(names):
            # writes the read-your-writes check brought in since: their vectors too
            await self._embedded(names)
            hits = self._search(q, names)
        if rewrites:
            more = [self._search(q.model_copy(update={"query": r}), names) for r in rewrites]
            hits = fuse_rankings([hits, *more], q.max_results * (1 + len(more)))
            if q.collapse:  # each ranking's hits are collapsed; their union may repeat
                hits = collapse(hits, self.engine.get)
            hits = hits[: q.max_results]
        if q.explain:
            for h in hits:
                log.info("recall %r: %s", q.query, h.explain())
        # counted as the recall returns: a vector that arrived during the search lowers it
        pending = sum(self.engine.unembedded(names).values())
        return RecallHits(self.engine.mark_vectors(hits, q.query is not None), pending)

    def _toward_goal(self, q: MemoryQuery, names: list[str]) -> list[ScoredEntry]:
        """The query's and its goal's rankings, each ``GOAL_DEPTH`` times deeper, blended
        (:mod:`retrieval.goal`), cut to ``max_results``."""
        assert q.context is not None
        deep = q.model_copy(update={"context": None, "max_results": q.max_results * GOAL_DEPTH})
        goal = deep.model_copy(update={"query": q.context.goal})
        blended = blend_goal(self._search(deep, names), self._search(goal, names),
                             q.context.weight)
        return blended[: q.max_results]

    async def _embedded(self, names: list[str]) -> None:
        """Wait until every entry of ``names`` has its vector (``EmbeddingBacklog`` past
        ``semantic_timeout``)."""
        await wait_embedded(lambda: self.engine.unembedded(names),
                            self.follower.wake_embedder, self.semantic_timeout)

    def _search(self, q: MemoryQuery, names: list[str]) -> list[ScoredEntry]:
        if q.context is not None:
            return self._toward_goal(q, names)
        now = self.bb.now_ms()  # decay and recency on the clock the entries were stamped with
        # Current truth (retrieval.truth): superseded versions pre-filtered out unless asked
        # for; beliefs re-scored and filtered from a deeper pool.
        q = truth_filter(q)
        k = q.max_results
        depth = k * DEPTH_PER_HIT
        hits, full = self._ranked(q, names, now, depth)
        if not q.collapse:
            return latest_first(hits)[:k]
        # Each fact once (retrieval.collapse): rank more candidates than asked for, fold the
        # forms of each fact into one hit, then cut.
        with tracing.stage("retrieval.collapse"):
            out = collapse(hits, self.engine.get)
        if len(out) < k and full:  # the candidates ran out: once more, deeper
            hits, _ = self._ranked(q, names, now, depth * 4)
            with tracing.stage("retrieval.collapse"):
                out = collapse(hits, self.engine.get)
        return latest_first(out)[:k]

    def _ranked(self, q: MemoryQuery, names: list[str], now: int,
                depth: int) -> tuple[list[ScoredEntry], bool]:
        """The engine's ``depth`` best, current truth applied, and whether it returned as
        many as asked (so there may be more)."""
        found = self.engine.search(q, names, now, depth=depth)
        with tracing.stage("retrieval.truth"):
            hits = current_truth(found, q, now)
            if q.utility:  # feedback from use reorders the candidates (retrieval.utility)
                hits = by_utility(hits, q.utility)
            if q.as_of is None:  # the newest statement is today's answer, not that time's
                hits = pull_updates(hits, self.engine.newest_on_slot)
        return hits, len(found) >= depth

    def pending_embeddings(self) -> int:
        """Entries indexed here still waiting for a vector (they rank by BM25 meanwhile)."""
        return self.engine.stats().pending_embeddings

    async def aclose(self) -> None:
        if self._follower is not None:
            await self._follower.aclose()

    async def __aenter__(self) -> Retriever:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
