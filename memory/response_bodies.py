"""The response bodies of the memory REST API, shared by the gateway and the remote client.

Pure pydantic: the gateway renders responses with these models, and :mod:`memory.remote`
parses the same responses back into the library's own types (:meth:`EntryOut.to_entry`,
:meth:`Hit.to_scored`, :meth:`RecallResponse.to_hits`). The requests are
:mod:`memory.request_bodies`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from blackboard.entry import claimed_agents

if TYPE_CHECKING:
    from collections.abc import Sequence

    from blackboard import Entry, Event
    from retrieval.completeness import RecallHits, RouteReport
    from retrieval.scoring import ScoredEntry

__all__ = [
    "BatchOut",
    "Components",
    "EntryOut",
    "EntryRefOut",
    "ErrorBody",
    "EventOut",
    "Hit",
    "MapOut",
    "MessagesOut",
    "RecallResponse",
    "RouteOut",
    "StatsOut",
    "TagsOut",
]


def _entry_fields(e: Entry) -> dict[str, Any]:
    """:class:`EntryOut`'s fields of ``e``, in its order: what :meth:`EntryOut.of` validates
    and :meth:`RecallResponse.json_of` serialises as is (the numbers as the model's types,
    so both write the same bytes)."""
    return {
        "id": e.id, "scope": e.scope, "value": e.value, "tags": sorted(e.tags),
        "metadata": dict(e.metadata), "key": e.key, "importance": float(e.importance),
        "strength": float(e.strength), "strength_at": int(e.strength_at),
        "reinforcements": int(e.reinforcements), "reinforced_by": list(e.reinforced_by),
        "created_at": int(e.created_at), "updated_at": int(e.updated_at),
        "expires_at": int(e.expires_at), "version": int(e.version), "source": list(e.source),
        "event_id": e.event_id, "embedder": e.embedder, "superseded_by": e.superseded_by,
        "author": e.author, "claimed_agents": claimed_agents(e), "uses": int(e.uses),
        "helpful": int(e.helpful),
    }


def _num(x: float | None) -> float | None:
    return None if x is None else float(x)


def _hit_fields(s: ScoredEntry, *, plain: bool = False) -> dict[str, Any]:
    """:class:`Hit`'s fields of ``s``, in its order (``plain``: the entry as
    :func:`_entry_fields` too, for :meth:`RecallResponse.json_of`)."""
    return {
        "entry": _entry_fields(s.entry) if plain else EntryOut.of(s.entry),
        "scope": s.scope, "score": float(s.score),
        "components": {"dense": _num(s.dense), "bm25": _num(s.bm25), "fused": float(s.fused),
                       "strength": float(s.strength), "recency": float(s.recency),
                       "importance": float(s.importance)},
        "also_in": [{"id": r.entry_id, "scope": r.scope} for r in s.also_in],
        "has_vector": bool(s.has_vector), "cites": list(s.cites),
        "has_first_pass": bool(s.has_first_pass), "newer_than": s.newer_than,
    }


class EntryOut(BaseModel):
    """An entry as JSON (the embedding bytes are left out; ``embedder`` says if it has one)."""

    id: str
    scope: str
    value: Any
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    key: str | None = None
    importance: float = 0.5
    strength: float = 1.0
    strength_at: int = 0
    reinforcements: int = 0
    reinforced_by: list[str] = Field(default_factory=list)
    created_at: int = 0
    updated_at: int = 0
    expires_at: int = 0
    version: int = 1
    source: list[str] = Field(default_factory=list)
    event_id: str = ""
    embedder: str | None = None
    superseded_by: str | None = None
    #: who wrote it, as the write script established it (docs/security.md, Authorship)
    author: str | None = None
    #: writers the entry's own metadata or tags name other than ``author``: claims only
    claimed_agents: list[str] = Field(default_factory=list)
    #: feedback from use: agents that judged it, and those that found it helpful
    uses: int = 0
    helpful: int = 0

    @classmethod
    def of(cls, e: Entry) -> EntryOut:
        return cls(**_entry_fields(e))

    def to_entry(self) -> Entry:
        from blackboard import Entry

        d = self.model_dump(exclude={"claimed_agents"})
        return Entry(**{**d, "tags": frozenset(self.tags),
                        "reinforced_by": tuple(self.reinforced_by),
                        "source": tuple(self.source)})


class BatchOut(BaseModel):
    entries: list[EntryOut]


class MessagesOut(BaseModel):
    entries: list[EntryOut]


class Components(BaseModel):
    """Every score component of a hit (see :class:`retrieval.scoring.ScoredEntry`)."""

    dense: float | None
    bm25: float | None
    fused: float
    strength: float
    recency: float
    importance: float


class EntryRefOut(BaseModel):
    """Another entry holding the same fact as a hit (:class:`blackboard.EntryRef`)."""

    id: str
    scope: str


class Hit(BaseModel):
    entry: EntryOut
    scope: str
    score: float
    components: Components
    #: The other forms of the same fact folded into this hit (copies, summaries, beliefs,
    #: episodes, team copies; ``MemoryQuery.collapse``), best-ranked first.
    also_in: list[EntryRefOut] = Field(default_factory=list)
    #: Whether the entry had its vector when the search ran (False: ranked by BM25 and
    #: the filters only).
    has_vector: bool = False
    #: The ids of the raw entries a derived hit (copy, summary, episode, belief, team
    #: copy) stands on; empty for a raw entry (:mod:`retrieval.citations`).
    cites: list[str] = Field(default_factory=list)
    #: Without its vector, whether it ranked by its first-pass one (rough meaning).
    has_first_pass: bool = False
    #: The id of an earlier statement on the same thing whose place this hit took (the
    #: newest statement ranks first): why its score may be below a later hit's.
    newer_than: str | None = None

    @classmethod
    def of(cls, s: ScoredEntry) -> Hit:
        return cls.model_validate(_hit_fields(s))

    def to_scored(self) -> ScoredEntry:
        from blackboard import EntryRef
        from retrieval.scoring import ScoredEntry

        c = self.components
        return ScoredEntry(self.entry.to_entry(), self.scope, c.dense, c.bm25, c.fused,
                           c.strength, c.recency, c.importance, self.score,
                           tuple(EntryRef(r.scope, r.id) for r in self.also_in),
                           self.has_vector, tuple(self.cites), self.has_first_pass,
                           self.newer_than)


def _route_fields(r: RouteReport) -> dict[str, Any]:
    return {"intent": r.intent, "route": r.route, "indexes": list(r.indexes),
            "notes": list(r.notes), "partial": bool(r.partial),
            "nodes_visited": int(r.nodes_visited)}


class RouteOut(BaseModel):
    """How a recall was answered (:class:`retrieval.completeness.RouteReport`)."""

    intent: str = Field(description="The intent asked: answer, locate, explore, "
                                    "time_boxed.")
    route: str = Field(description="The route whose hits came back: hybrid, bm25, explore, "
                                   "filters, newest.")
    indexes: list[str] = Field(description="The indexes that answered: dense, bm25, explore.")
    notes: list[str] = Field(description="Why each other index did not answer, the "
                                         "fallbacks taken, the budgets that cut the result.")
    partial: bool = Field(description="A budget (timeout_ms, budget_tokens) cut the result "
                                      "short: it holds what was found by then.")
    nodes_visited: int = Field(0, description="Table-of-contents nodes the explore route "
                                              "read.")

    @classmethod
    def of(cls, r: RouteReport) -> RouteOut:
        return cls(**_route_fields(r))

    def to_report(self) -> RouteReport:
        from retrieval.completeness import RouteReport

        return RouteReport(self.intent, self.route, tuple(self.indexes), tuple(self.notes),
                           self.partial, self.nodes_visited)


class RecallResponse(BaseModel):
    hits: list[Hit]
    #: With ``explain``: the scopes searched, for a caller to see what was considered.
    scopes: list[str] | None = None
    #: Entries of the searched scopes still waiting for a vector when the search ran
    #: (0: the ranking used meaning for every entry).
    dense_pending: int = 0
    #: Which route and indexes answered, and why others did not (None: not reported).
    route: RouteOut | None = None
    #: The table-of-contents nodes the explore route returned, as its walk gave them.
    nodes: list[Any] = Field(default_factory=list)

    @classmethod
    def of(cls, hits: Sequence[ScoredEntry], scopes: list[str] | None = None) -> RecallResponse:
        """The response for a recall's ``hits`` (a :class:`RecallHits`: its report too)."""
        from pydantic_core import to_jsonable_python

        from retrieval.completeness import RecallHits

        rh = hits if isinstance(hits, RecallHits) else RecallHits.like(hits, hits)
        return cls(hits=[Hit.of(h) for h in hits], scopes=scopes,
                   dense_pending=rh.dense_pending, route=RouteOut.of(rh.route),
                   nodes=[to_jsonable_python(n, fallback=str) for n in rh.nodes])

    @classmethod
    def json_of(cls, hits: Sequence[ScoredEntry], scopes: list[str] | None = None) -> bytes:
        """``of(hits, scopes).model_dump_json()``, byte for byte, without building the
        models: the same field mappings (:func:`_entry_fields`, :func:`_hit_fields`), plain
        dicts, one serialisation. A recall's response is its largest (ten hits, each an
        entry), and validating what the library's own types already guarantee cost the
        gateway ~0.2 ms of every recall (issue 24: REST overhead)."""
        from pydantic_core import to_json, to_jsonable_python

        from retrieval.completeness import RecallHits

        rh = hits if isinstance(hits, RecallHits) else RecallHits.like(hits, hits)
        return to_json({
            "hits": [_hit_fields(h, plain=True) for h in hits], "scopes": scopes,
            "dense_pending": rh.dense_pending,
            "route": _route_fields(rh.route),
            "nodes": [to_jsonable_python(n, fallback=str) for n in rh.nodes]})

    def to_hits(self) -> RecallHits:
        from retrieval.completeness import RecallHits

        return RecallHits([h.to_scored() for h in self.hits], self.dense_pending,
                          self.route.to_report() if self.route is not None else None,
                          self.nodes)


class TagsOut(BaseModel):
    tags: dict[str, int]


class MapOut(BaseModel):
    """The memory map (:class:`memory.MemoryMap` ``to_dict()``); an operator's map has
    ``agent`` ``"*"`` and every registered scope."""

    agent: str
    teams: list[str]
    scopes: list[dict[str, Any]]
    edges: list[dict[str, Any]]


class StatsOut(BaseModel):
    scopes: dict[str, dict[str, Any]]


class EventOut(BaseModel):
    """One feed event; ``cursor`` (``<scope>@<stream id>``) is what SSE sends as ``id:``."""

    id: str
    scope: str
    type: str
    entry_id: str
    version: int
    tags: list[str]
    at: int

    @property
    def cursor(self) -> str:
        return f"{self.scope}@{self.id}"

    @classmethod
    def of(cls, ev: Event) -> EventOut:
        return cls(id=ev.id, scope=ev.scope, type=str(ev.type), entry_id=ev.entry_id,
                   version=ev.version, tags=sorted(ev.tags), at=ev.at)


class ErrorBody(BaseModel):
    """Every failure: ``error`` the kind (the library exception's name, or ``unauthorized``,
    ``rate_limited``...), ``detail`` one line, ``field`` the offending request field."""

    error: str
    detail: str
    field: str | None = None
