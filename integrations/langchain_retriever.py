"""A LangChain retriever over :meth:`memory.AgentMemory.recall`.

::

    from integrations.langchain import BlackboardRetriever

    retriever = BlackboardRetriever(memory=mem, k=5, levels=["semantic"])
    docs = retriever.invoke("payment terms")          # or await retriever.ainvoke(...)

Each hit becomes a ``Document``: ``page_content`` the entry's text, ``id`` its entry id,
``metadata`` where it is (``entry_id``, ``scope``, ``key``, ``tags``, ``created_at``), every
score component recall gives (``score``, ``dense``, ``bm25``, ``fused``, ``strength``,
``recency``, ``importance``), the other places of the same fact (``also_in``) and the entry's
own metadata under ``metadata``. ``k``, ``levels``, ``scopes`` and ``tag_filter`` are fields,
and ``invoke(query, k=..., levels=..., ...)`` overrides them for one call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ConfigDict, PrivateAttr, field_validator, model_validator

from blackboard import InvalidArgument
from memory import AgentMemory, MemoryQuery, ScoredEntry, TagFilter, parse_scope

from .langchain_bridge import MemoryBridge, check_k, missing_langchain

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
except ImportError as exc:
    raise missing_langchain(exc) from exc

__all__ = ["BlackboardRetriever", "hit_document"]

#: What ``invoke``/``ainvoke`` take besides the query, one call at a time.
_CALL_FIELDS = frozenset({"k", "levels", "scopes", "tag_filter"})


def hit_document(hit: ScoredEntry) -> Document:
    """A recall hit as a LangChain ``Document`` (see the module's docstring)."""
    e = hit.entry
    return Document(
        id=e.id,
        page_content=e.text,
        metadata={
            "entry_id": e.id, "scope": hit.scope, "key": e.key, "tags": sorted(e.tags),
            "created_at": e.created_at, "score": hit.score, "dense": hit.dense,
            "bm25": hit.bm25, "fused": hit.fused, "strength": hit.strength,
            "recency": hit.recency, "importance": hit.importance,
            "also_in": [{"scope": r.scope, "entry_id": r.entry_id} for r in hit.also_in],
            "metadata": dict(e.metadata),
        },
    )


def searched_scopes(mem: AgentMemory, scopes: Sequence[str] | None,
                    levels: Sequence[str] | None) -> list[str]:
    """The scopes a recall with these narrowings searches; a clear error for a scope that
    is no memory scope, one the agent may not read, an unknown level, or narrowings that
    leave nothing to search."""
    for s in scopes or ():
        parse_scope(s)  # InvalidScope names the forms a memory scope takes
    found = mem.recall_scopes(scopes, levels)  # AccessDenied, unknown level: InvalidArgument
    if not found:
        raise InvalidArgument(
            f"no scope agent {mem.agent_id!r} may read matches scopes={scopes!r} "
            f"levels={levels!r}")
    return found


class BlackboardRetriever(BaseRetriever):
    """Documents from an agent's memory: hybrid recall (dense + BM25 + hard filters),
    best first, over the scopes the agent may read.

    ``memory``: an :class:`~memory.AgentMemory` (async calls only) or a
    :class:`~memory.sync.SyncMemory` (sync and async). ``k`` (>= 1) documents at most;
    ``levels`` (``"semantic"``, ``"ltm:semantic"``...) and ``scopes`` narrow the search,
    ``tag_filter`` is a hard pre-filter. Bad values fail at construction with pydantic's
    ValidationError (a ValueError) naming the problem, or AccessDenied for a scope the
    agent may not read; a call that overrides them checks them the same way."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any
    k: int = 4
    levels: list[str] | None = None
    scopes: list[str] | None = None
    tag_filter: TagFilter = TagFilter()

    _bridge: MemoryBridge = PrivateAttr()

    @field_validator("k", mode="before")
    @classmethod
    def _k(cls, v: object) -> int:
        return check_k(v)

    @model_validator(mode="after")
    def _checked(self) -> BlackboardRetriever:
        self._bridge = MemoryBridge(self.memory)
        searched_scopes(self._bridge.memory, self.scopes, self.levels)
        return self

    def _query(self, query: str, overrides: dict[str, Any]) -> MemoryQuery:
        unknown = set(overrides) - _CALL_FIELDS
        if unknown:
            raise InvalidArgument(f"unknown retriever arguments {sorted(unknown)}; "
                                  f"known: {sorted(_CALL_FIELDS)}")
        if not isinstance(query, str) or not query.strip():
            raise InvalidArgument("query must be a non-empty string")
        k = check_k(overrides.get("k", self.k))
        levels = overrides.get("levels", self.levels)
        scopes = overrides.get("scopes", self.scopes)
        if "levels" in overrides or "scopes" in overrides:
            searched_scopes(self._bridge.memory, scopes, levels)
        tf = overrides.get("tag_filter", self.tag_filter)
        if not isinstance(tf, TagFilter):
            tf = TagFilter.model_validate(tf)
        return MemoryQuery(query=query, max_results=k, levels=levels, scopes=scopes,
                           tag_filter=tf)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        q = self._query(query, kwargs)
        hits = self._bridge.run(lambda m: m.recall(q))
        return [hit_document(h) for h in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        q = self._query(query, kwargs)
        hits = await self._bridge.arun(lambda m: m.recall(q))
        return [hit_document(h) for h in hits]
