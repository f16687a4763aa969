"""The header's search box: one recall over every scope the caller may read, answered as
short rows (text, scope, level, when, score) that link to the entry view. A row also says
why it may sit above a higher score (:mod:`retrieval.collapse`: a fact ranks by its
best-ranked form and shows as first written; :mod:`retrieval.updates`: the newest
statement on a thing ranks first): the scopes of its other forms, and the earlier
statement it took the place of. It shares the
recall explorer's retrievers (one per Redis user), so their indexes stay warm for both."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from memory import MemoryQuery

from ..caller import Caller
from .recall import _retriever, _scopes, _trim

__all__ = ["search"]

#: Characters of an entry's text a result row shows.
SNIPPET = 240
#: Scopes of a hit's other forms a row names (copies, summaries, beliefs: best-ranked first).
ALSO_IN = 4


async def search(app: FastAPI, caller: Caller, text: str, limit: int) -> dict[str, Any]:
    q = MemoryQuery(query=text, max_results=limit)
    scopes = await _scopes(caller, q)
    hits = await _retriever(app, caller).recall(q, scopes) if scopes else []
    await _trim(app)
    rows = [{"id": h.entry.id, "scope": h.scope, "text": h.entry.text[:SNIPPET],
             "tags": sorted(h.entry.tags)[:8], "created_at": h.entry.created_at,
             "score": round(h.score, 4), "also_in": [r.scope for r in h.also_in][:ALSO_IN],
             "newer_than": h.newer_than} for h in hits]
    # how complete the ranking was: entries of these scopes still waiting for a vector
    return {"query": text, "scopes": len(scopes), "hits": rows,
            "dense_pending": getattr(hits, "dense_pending", 0)}
