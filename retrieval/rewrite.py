"""Optional LLM query rewriting (off by default; no target depends on it).

:class:`LLMQueryRewriter` asks any client of the consolidation layer's
:class:`~consolidation.llm.protocol.LLMClient` protocol for a few alternative phrasings of a
recall query (synonyms, the entities it implies, a resolved date). The retriever searches
the original and each rewrite and fuses the rankings by reciprocal rank
(:func:`fuse_rankings`), so a bad rewrite can only add candidates, never remove the
original's. Any client error falls back to the original query alone, with one log line.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

from pydantic import BaseModel, Field

from .fusion import RRF_K
from .scoring import ScoredEntry

__all__ = ["LLMQueryRewriter", "QueryRewriter", "QueryRewrites", "fuse_rankings"]

log = logging.getLogger(__name__)

SYSTEM = (
    "You rewrite a question asked of a conversational memory into search queries. Return "
    "JSON {\"queries\": [...]}: at most {n} short alternative queries that would find the "
    "messages answering it (other words for its key terms, the people, places and events "
    "it implies). Do not answer the question."
)


class QueryRewrites(BaseModel):
    """The rewriter's output schema."""

    queries: list[str] = Field(default_factory=list, max_length=8)


class QueryRewriter(Protocol):
    """``await rewriter(query) -> alternative queries`` (the original not included)."""

    async def __call__(self, query: str) -> list[str]: ...


class LLMQueryRewriter:
    """Rewrites through ``llm`` (an ``LLMClient``: ``complete_json(system, user,
    schema)``); at most ``n`` rewrites, empty and duplicate ones dropped."""

    def __init__(self, llm: Any, n: int = 3) -> None:
        self.llm = llm
        self.n = n

    async def __call__(self, query: str) -> list[str]:
        try:
            out = await self.llm.complete_json(
                SYSTEM.replace("{n}", str(self.n)), query, QueryRewrites
            )
        except Exception as exc:  # the rewriter is optional: any failure means no rewrites
            log.warning("query rewrite failed, searching the original only: %s", exc)
            return []
        seen = {query.strip().lower()}
        res = []
        for q in out.queries:
            q = q.strip()
            if q and q.lower() not in seen:
                seen.add(q.lower())
                res.append(q)
        return res[: self.n]


def fuse_rankings(rankings: Sequence[list[ScoredEntry]], k: int,
                  rrf_k: int = RRF_K) -> list[ScoredEntry]:
    """Reciprocal-rank fusion of several rankings of the same memory: each hit's score
    becomes ``sum 1 / (rrf_k + rank)`` over the rankings it appears in (by entry id and
    scope); the best ``k``, best first (ties: first seen)."""
    score: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], ScoredEntry] = {}
    for ranking in rankings:
        for r, h in enumerate(ranking, start=1):
            key = (h.scope, h.entry.id)
            score[key] = score.get(key, 0.0) + 1.0 / (rrf_k + r)
            first.setdefault(key, h)
    order = sorted(first, key=lambda key: -score[key])[:k]
    return [replace(first[key], score=score[key]) for key in order]
