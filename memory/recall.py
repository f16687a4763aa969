"""Recall for :class:`~memory.agent.AgentMemory`: ``recall`` and ``context``, the scopes a
query searches (``recall_scopes``) and the retriever that answers it (the
:class:`Retriever` protocol; the retrieval layer's default hybrid one, made on the first
ranked recall). A mixin of its own so the agent's module keeps its scopes, writes and
lifecycle, and the query path (scopes, retriever, team beliefs first) reads in one place."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from blackboard import Blackboard, InvalidArgument
from retrieval.completeness import RecallHits
from retrieval.goal import RetrievalContext, with_context
from retrieval.query import MemoryQuery, as_query
from retrieval.reconcile import team_beliefs_first
from retrieval.scoring import ScoredEntry
from retrieval.structured import StructuredRetriever

from .access import AccessPolicy
from .aliases import deprecated_keyword
from .context import Context, assemble, validate_budget
from .errors import SemanticRecallUnavailable
from .levels import level_named
from .naming import parse_scope

__all__ = ["Recall", "Retriever"]


class Retriever(Protocol):
    """Answers a recall: (query, scopes resolved and checked by memory) -> at most
    ``q.max_results`` hits in the query's order (retrieval's ``Retriever``: hybrid, best
    first; its ``StructuredRetriever``: newest first)."""

    async def recall(self, q: MemoryQuery, scopes: Sequence[str], /) -> list[ScoredEntry]: ...

    async def aclose(self) -> None: ...


class Recall:
    """Recall over the readable scopes; :class:`~memory.agent.AgentMemory` sets these."""

    bb: Blackboard
    access: AccessPolicy
    retriever: Retriever | None
    #: No retriever given and one may be made: ``_retriever_for`` makes the default one.
    _default_retriever: bool
    #: The retriever is the one made here (closed with the memory).
    _owns_retriever: bool
    _newest: StructuredRetriever
    #: AgentMemory's method: every scope the agent may read.
    readable_scopes: Callable[[], list[str]]

    async def recall(self, query: str | MemoryQuery, *, max_results: int | None = None,
                     explain: bool = False, limit: int | None = None,
                     context: RetrievalContext | None = None) -> RecallHits:
        """Recall -> ``list[ScoredEntry]`` (a :class:`~retrieval.completeness.RecallHits`:
        with ``dense_pending``, the searched entries still waiting for a vector, and
        ``route``, which route and indexes answered and why others did not; each hit's
        ``has_vector`` and ``cites``), in the query's order.

        Text or a :class:`MemoryQuery`, over the readable scopes, narrowed by the query's
        ``scopes`` (each checked) and ``levels`` (``"working"``, ``"semantic"`` or
        ``"ltm:semantic"``...: those levels of the agent's and its teams' scopes).
        ``order="relevance"`` (the default): hybrid recall (dense + BM25 + hard filters),
        best first; with ``default_retriever=False`` and no retriever it raises
        :class:`SemanticRecallUnavailable`. ``order="newest"``: the entries matching the
        tag, time and key filters, newest first, read from the scopes' indexes.
        ``max_results`` overrides the query's; ``explain`` logs each hit's score breakdown.
        ``limit`` is the deprecated name of ``max_results`` (:mod:`memory.aliases`).
        ``context``: what the recall is for; its ``goal`` biases the ranking toward it
        (:mod:`retrieval.goal`; as the query's ``context``)."""
        n = deprecated_keyword(max_results, limit, "limit", "AgentMemory.recall()")
        q = with_context(as_query(query, n, explain), context)
        scopes = self.recall_scopes(q.scopes, q.levels)
        found = await self._retriever_for(q).recall(q, scopes)
        # a team's reconciled belief before a member's own
        hits = team_beliefs_first(found) if q.order != "newest" else found
        # RecallHits: the hits with how many searched entries still wait for a vector and
        # how the recall was answered (route, indexes, notes)
        return RecallHits.like(found, hits[: q.max_results])

    async def context(self, query: str, *, budget_tokens: int = 1500,
                      levels: Sequence[str] | None = None,
                      scopes: Sequence[str] | None = None) -> Context:
        """What memory holds on ``query`` as prompt-ready text within ``budget_tokens``
        (:mod:`memory.context`): current beliefs first (confidence, last supported,
        evidence count), then the memories, each with a citation id; an entry and its
        derived copies once. InvalidArgument for an empty query or a budget outside
        ``[1, MAX_BUDGET_TOKENS]``."""
        budget = validate_budget(budget_tokens)
        if not isinstance(query, str) or not query.strip():
            raise InvalidArgument("query must be a non-empty string")
        # a memory's line takes 15 tokens or more: no more hits than the budget can hold
        depth = max(10, min(200, budget // 15))
        hits = await self.recall(MemoryQuery(
            query=query, levels=list(levels) if levels else None,
            scopes=list(scopes) if scopes else None, max_results=depth))
        return assemble(hits, budget)

    def _retriever_for(self, q: MemoryQuery) -> Retriever:
        if q.order == "newest":
            return self._newest
        if self.retriever is None and self._default_retriever:
            from retrieval.recall import Retriever as HybridRetriever

            self.retriever = HybridRetriever(self.bb)
            self._owns_retriever = True
        if self.retriever is None:
            raise SemanticRecallUnavailable(
                "recall by relevance needs a retriever (AgentMemory(..., retriever=...)); "
                "MemoryQuery(order='newest') serves tag, time and key queries without one"
            )
        return self.retriever

    def recall_scopes(self, scopes: Sequence[str] | None = None,
                      levels: Sequence[str] | None = None) -> list[str]:
        """The scopes a query searches: ``scopes`` (each checked) or every readable one,
        kept to the given ``levels`` (level names or scope suffixes, e.g. ``ltm:semantic``)."""
        names = [self.access.check_read(s) for s in scopes] if scopes else self.readable_scopes()
        if not levels:
            return names
        want = {level_named(x) for x in levels}
        out = []
        for s in names:
            try:
                lvl = parse_scope(s).level
            except InvalidArgument:
                continue
            if lvl in want:
                out.append(s)
        return out

