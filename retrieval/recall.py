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

from blackboard import Blackboard, Entry, tracing

from .citations import cite
from .collapse import collapse
from .completeness import IndexNotes, RecallHits, RouteReport, wait_embedded
from .embedders.base import Embedder
from .engine import SearchEngine
from .follower import IndexFollower
from .goal import GOAL_DEPTH, blend_goal
from .query import MemoryQuery, as_query
from .rewrite import QueryRewriter, fuse_rankings
from .routes import RouteRun, explore_hits, walk
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
            return RecallHits(route=RouteReport(intent=q.intent, route="none",
                                                notes=("no scope to search",)))
        if tracing.ENABLED:  # the query's text is not recorded: it is the user's data
            with tracing.span("retrieval.recall", {
                "retrieval.scopes": len(names), "retrieval.max_results": q.max_results,
                "retrieval.consistency": q.consistency,
            }) as sp:
                out = await self._recall(q, names)
                sp.set_attribute("retrieval.hits", len(out))
                sp.set_attribute("retrieval.dense_pending", out.dense_pending)
                sp.set_attribute("retrieval.route", out.route.route)
                sp.set_attribute("retrieval.indexes", list(out.route.indexes))
                sp.set_attribute("retrieval.partial", out.route.partial)
                return out
        return await self._recall(q, names)

    async def _recall(self, q: MemoryQuery, names: list[str]) -> RecallHits:
        # The route (retrieval.routes): the intent's first route, then its fallbacks; a
        # broken index is noted in ``run`` and left out, never raised.
        run = RouteRun(q)
        hits: list[ScoredEntry] | None = None
        if q.intent == "explore":
            hits = await self._explored(q, names, run)
        if hits is None:
            hits = await self._indexed(q, names, run)
            if run.degraded() and q.intent != "explore":
                hits = await self._plus_explore(q, names, run, hits)
        hits = run.within_budget(hits)
        if q.explain:
            for h in hits:
                log.info("recall %r: %s", q.query, h.explain())
        # counted as the recall returns: a vector that arrived during the search lowers it
        pending = sum(self.engine.unembedded(names).values())
        marked = self.engine.mark_vectors(hits, q.query is not None)
        return RecallHits(cite(marked, self.engine.get), pending, run.report(), run.nodes)

    async def _indexed(self, q: MemoryQuery, names: list[str], run: RouteRun) -> list[ScoredEntry]:
        """The indexes' ranking (dense and BM25; ``locate``: BM25 first), seeing every
        write acknowledged before the call -- within the deadline, if any: past it, what
        the indexes hold by then."""
        rewrites: list[str] = []
        if self.rewriter and q.query:
            rewrites = await run.within(self.rewriter(q.query), "rewriting the query") or []
        fol = self.follower
        await run.within(fol.follow(names), "while loading the indexes", keep=True)
        if q.consistency == "semantic":
            # every write acknowledged before the call indexed, then embedded: the search
            # below then ranks them all by meaning (a vector arriving during a search must
            # not make that search's ranking pass for a complete one)
            await fol.sync(names, self._wait(run))
            await self._embedded(names, run)
        # Vectors the index role stored since the entries were read: taken, not computed
        # again by the search. Then a small batch being embedded: waited for here, off the
        # loop, not in the search.
        await run.within(fol.adopt_stored(names), "while reading stored vectors", keep=True)
        await run.within(fol.settled(self.engine.inline_embed), "while embedding new entries",
                         keep=True)
        # Read-your-writes without paying the round trip on top of the search: ask Redis for
        # every scope's newest feed id, search while the reply travels, then check that the
        # search saw at least those ids; if not, catch up and search again.
        seen = fol.positions(names)
        hits, ids = await self.bb.feed_probe.around(names, lambda: self._search(q, names, run))
        if fol.behind(ids, seen) and not run.out_of_time():
            with tracing.stage("retrieval.catch_up"):
                if not await fol.catch_up_to(ids, self._wait(run)) and run.deadline:
                    run.cut(f"timeout_ms={q.deadline_ms} reached before the newest writes "
                            "were indexed")
            hits = self._search(q, names, run)
        if q.consistency == "semantic" and self.engine.unembedded(names):
            # writes the read-your-writes check brought in since: their vectors too
            await self._embedded(names, run)
            hits = self._search(q, names, run)
        if rewrites:
            more = [self._search(q.model_copy(update={"query": r}), names, run)
                    for r in rewrites]
            hits = fuse_rankings([hits, *more], q.max_results * (1 + len(more)))
            if q.collapse:  # each ranking's hits are collapsed; their union may repeat
                hits = collapse(hits, self.engine.get)
            hits = hits[: q.max_results]
        return hits

    def _wait(self, run: RouteRun) -> float:
        """How long a wait for the index may take: ``wait_timeout``, less past the
        deadline."""
        left = run.left()
        return self.wait_timeout if left is None else min(self.wait_timeout, left)

    async def _explored(self, q: MemoryQuery, names: list[str],
                        run: RouteRun) -> list[ScoredEntry] | None:
        """The explore route's hits (None, noted, when it is missing, failed or found
        nothing: the hybrid answers instead)."""
        entries = await walk(run, self.bb, names)
        hits = self._explore_hits(q, names, entries) if entries is not None else []
        if not hits:
            if entries is not None:
                run.indexes.missed("explore", "explore found nothing", broken=False)
            run.note("the hybrid answered instead of explore")
            return None
        run.route = "explore"
        run.note("dense and bm25 not asked: the explore route answered")
        return hits

    async def _plus_explore(self, q: MemoryQuery, names: list[str], run: RouteRun,
                            hits: list[ScoredEntry]) -> list[ScoredEntry]:
        """``hits`` of a search an index could not answer, fused with the explore route's
        (reciprocal ranks); as they are when it has nothing or no time is left."""
        if run.out_of_time():
            return hits
        entries = await walk(run, self.bb, names)
        found = self._explore_hits(q, names, entries) if entries else []
        if not found:
            return hits
        run.note("explore added: an index did not answer")
        fused = fuse_rankings([hits, found], q.max_results * 2)
        return (collapse(fused, self.engine.get) if q.collapse else fused)[: q.max_results]

    def _explore_hits(self, q: MemoryQuery, names: list[str],
                      entries: list[Entry]) -> list[ScoredEntry]:
        """The walk's entries as hits under ``q``'s filters, current truth and collapse."""
        now = self.bb.now_ms()
        hits = explore_hits(entries, truth_filter(q), names, now, self.engine.decay(names),
                            self.engine.config)
        hits = current_truth(hits, q, now)
        if q.collapse:
            hits = collapse(hits, self.engine.get)
        return hits[: q.max_results]

    def _toward_goal(self, q: MemoryQuery, names: list[str], run: RouteRun) -> list[ScoredEntry]:
        """The query's and its goal's rankings, each ``GOAL_DEPTH`` times deeper, blended
        (:mod:`retrieval.goal`), cut to ``max_results``."""
        assert q.context is not None
        deep = q.model_copy(update={"context": None, "max_results": q.max_results * GOAL_DEPTH})
        goal = deep.model_copy(update={"query": q.context.goal})
        blended = blend_goal(self._search(deep, names, run), self._search(goal, names, run),
                             q.context.weight)
        return blended[: q.max_results]

    async def _embedded(self, names: list[str], run: RouteRun | None = None) -> None:
        """Wait until every entry of ``names`` has its vector (``EmbeddingBacklog`` past
        ``semantic_timeout``, or the deadline)."""
        left = run.left() if run is not None else None
        wait = self.semantic_timeout if left is None else min(self.semantic_timeout, left)
        await wait_embedded(lambda: self.engine.unembedded(names),
                            self.follower.wake_embedder, wait)

    def _search(self, q: MemoryQuery, names: list[str], run: RouteRun) -> list[ScoredEntry]:
        """One ranking of the indexes; ``locate``: BM25 alone first, the hybrid when it
        found nothing."""
        if q.intent != "locate":
            return self._search_once(q, names, run)
        hits = self._search_once(q, names, run, dense=False)
        if hits:
            run.route = "bm25"
            run.indexes.missed("dense", "dense not asked: bm25 found the words (locate)",
                               broken=False)
            return hits
        run.route = "hybrid"
        run.note("bm25 found nothing: the hybrid answered (locate)")
        return self._search_once(q, names, run)

    def _search_once(self, q: MemoryQuery, names: list[str], run: RouteRun,
                     dense: bool = True) -> list[ScoredEntry]:
        if q.context is not None:
            return self._toward_goal(q, names, run)
        now = self.bb.now_ms()  # decay and recency on the clock the entries were stamped with
        # Current truth (retrieval.truth): superseded versions pre-filtered out unless asked
        # for; beliefs re-scored and filtered from a deeper pool.
        q = truth_filter(q)
        k = q.max_results
        depth = k * DEPTH_PER_HIT
        hits, full = self._ranked(q, names, now, depth, dense, run.indexes)
        if not q.collapse:
            return latest_first(hits)[:k]
        # Each fact once (retrieval.collapse): rank more candidates than asked for, fold the
        # forms of each fact into one hit, then cut.
        with tracing.stage("retrieval.collapse"):
            out = collapse(hits, self.engine.get)
        if len(out) < k and full:  # the candidates ran out: once more, deeper
            hits, _ = self._ranked(q, names, now, depth * 4, dense, run.indexes)
            with tracing.stage("retrieval.collapse"):
                out = collapse(hits, self.engine.get)
        return latest_first(out)[:k]

    def _ranked(self, q: MemoryQuery, names: list[str], now: int, depth: int, dense: bool,
                notes: IndexNotes) -> tuple[list[ScoredEntry], bool]:
        """The engine's ``depth`` best, current truth applied, and whether it returned as
        many as asked (so there may be more)."""
        found = self.engine.search(q, names, now, depth=depth, dense=dense, notes=notes)
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
