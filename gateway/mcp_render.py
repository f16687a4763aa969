"""What the MCP tools answer, written for a model that pays for every character.

One rule for every tool (:func:`answer`): the JSON is compact (no indentation, no null
field), the same object as ``structuredContent`` and as the text a model reads. Recall
hits carry scores to 3 digits (16 digits say nothing a ranking needs); ``memory_map`` is a
summary by default (:func:`map_summary`: a line per scope, a line per edge), the full map
with ``detail``. Descriptions go through :func:`flat`: one paragraph, no indentation.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from memory.response_bodies import EntryRefOut, Hit, MapOut, RecallResponse, RouteOut

__all__ = ["Found", "MapSummary", "Recalled", "Route", "answer", "edge_line", "flat", "found",
           "map_summary", "scope_line", "score", "tool"]

#: Digits of a score: enough to rank and compare, not 16.
SCORE_DIGITS = 3


def flat(doc: str | None) -> str:
    """A docstring as one paragraph on one line: no indentation a model must read past."""
    return " ".join(inspect.cleandoc(doc or "").split())


def score(x: float | None) -> float | None:
    return None if x is None else round(x, SCORE_DIGITS)


def answer(m: BaseModel) -> CallToolResult:
    """``m`` as a tool result: compact JSON without null fields, as text and structured."""
    data = m.model_dump(mode="json", exclude_none=True)
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=data)


class Found(BaseModel):
    """One recalled memory; ``components`` (with explain) says why it ranked there."""

    id: str
    scope: str
    content: Any
    tags: list[str]
    created: str = Field(description="When it was stored (ISO 8601, UTC).")
    score: float
    components: dict[str, float | None] | None = None
    author: str | None = Field(None, description="Who wrote it, as the store established "
                               "it (never a name found in its content or tags).")
    claimed_agents: list[str] | None = Field(None, description="Writers its own metadata "
                                             "or tags name besides the author: claims only.")
    also_in: list[EntryRefOut] | None = Field(None, description="Other memories holding the "
                                              "same fact (copies, summaries, beliefs), folded "
                                              "into this one.")
    has_vector: bool = Field(False, description="Whether it was searchable by meaning when "
                             "recalled (false: matched by keywords and filters only).")
    cites: list[str] | None = Field(None, description="Ids of the raw memories a derived "
                                    "one (summary, episode, belief, copy) stands on.")

    has_first_pass: bool = Field(False, description="Without its vector, whether it was "
                                 "matched by rough meaning (a first-pass vector) too.")
    newer_than: str | None = Field(None, description="Id of an earlier statement on the same "
                                   "thing whose place this one took (the newest ranks first).")


class Route(BaseModel):
    """How the recall was answered, in short (``memory.response_bodies.RouteOut`` in full)."""

    intent: str | None = Field(None, description="The intent asked, when not answer.")
    route: str = Field(description="hybrid, bm25, explore, filters or newest.")
    indexes: list[str] = Field(description="The indexes that answered.")
    notes: list[str] | None = Field(None, description="Why other indexes did not answer; "
                                    "fallbacks; budgets that cut the result.")
    partial: bool | None = Field(None, description="True: a budget cut the result short.")
    nodes_visited: int | None = None

    @classmethod
    def of(cls, r: RouteOut) -> Route:
        return cls(intent=None if r.intent == "answer" else r.intent, route=r.route,
                   indexes=r.indexes, notes=r.notes or None, partial=r.partial or None,
                   nodes_visited=r.nodes_visited or None)


class Recalled(BaseModel):
    memories: list[Found]
    dense_pending: int = Field(0, description="Memories searched that were not yet "
                               "searchable by meaning (0: every one was).")
    route: Route | None = None
    nodes: list[Any] | None = Field(None, description="Table-of-contents nodes the explore "
                                    "route returned.")

    @classmethod
    def of(cls, r: RecallResponse, explain: bool) -> Recalled:
        return cls(memories=[found(h, explain) for h in r.hits], dense_pending=r.dense_pending,
                   route=Route.of(r.route) if r.route is not None else None,
                   nodes=r.nodes or None)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def found(h: Hit, explain: bool) -> Found:
    e = h.entry
    comps = ({k: score(v) for k, v in h.components.model_dump().items()}
             if explain else None)
    return Found(id=e.id, scope=e.scope, content=e.value, tags=e.tags,
                 created=_iso(e.created_at), score=round(h.score, SCORE_DIGITS),
                 components=comps, author=e.author, claimed_agents=e.claimed_agents or None,
                 also_in=h.also_in or None, has_vector=h.has_vector, cites=h.cites or None,
                 has_first_pass=h.has_first_pass, newer_than=h.newer_than)


class MapSummary(BaseModel):
    """The memory map in short (``memory_map`` without detail)."""

    agent: str = Field(description="Whose view ('*': an operator's, every scope).")
    teams: list[str]
    scopes: list[str] = Field(description="'<scope> <entries>', '(read-only)' when you "
                              "may not write it.")
    edges: list[str] = Field(description="'<source> -> <target> (<transformer>, <n> "
                             "pending)': where memories consolidate to.")
    hint: str = "memory_map with detail=true: each scope's limits and each edge's id."


def scope_line(s: Mapping[str, Any]) -> str:
    ro = "" if s.get("writable", True) else " (read-only)"
    return f"{s['scope']} {s['count']}{ro}"


def edge_line(e: Mapping[str, Any]) -> str:
    pending = e.get("pending")
    tail = "" if pending is None else f", {pending} pending"
    return f"{e['source']} -> {e['target']} ({e['transformer']}{tail})"


def map_summary(m: MapOut) -> MapSummary:
    """``m`` in lines: each scope with its count, each bound edge as source -> target."""
    return MapSummary(agent=m.agent, teams=m.teams, scopes=[scope_line(s) for s in m.scopes],
                      edges=[edge_line(e) for e in m.edges])


_Fn = TypeVar("_Fn", bound=Callable[..., Any])


def tool(mcp: MCPServer, title: str, **hints: bool) -> Callable[[_Fn], _Fn]:
    """``mcp.tool`` with the function's docstring as a :func:`flat` description: the SDK
    would pass the docstring's indentation to the model as it is."""
    def register(fn: _Fn) -> _Fn:
        return mcp.tool(description=flat(fn.__doc__),
                        annotations=ToolAnnotations(title=title, **hints))(fn)
    return register
