"""MCP tools ``timeline`` and ``expand``: memory by time, as REST's ``GET /v1/timeline``
(:mod:`memory.toc`): read summaries from the year down, then a segment's raw entries."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from .caller import Caller
from .mcp_render import answer, tool

__all__ = ["Segment", "Timeline", "add_timeline_tools"]

# Module level: the SDK reads the tools' annotations by name from this module's globals.
At = Annotated[str | None, Field(max_length=40, description=(
    "2023, 2023-05, 2023-05-08 or a node id such as w2023-05-01; omit for the root."))]
Depth = Annotated[int, Field(ge=0, le=5, description="Levels of children to include.")]
Ref = Annotated[str, Field(min_length=1, max_length=260, description=(
    "A segment's ref as timeline returns it: <scope>#s2023-05-08.0."))]


class Timeline(BaseModel):
    node: dict[str, Any] = Field(description="The node (span, count, tags, keywords, actors, "
                                             "summary) with its children under 'nodes'.")


class Grip(BaseModel):
    id: str
    scope: str
    created_at: int
    value: Any


class Segment(BaseModel):
    segment: str
    entries: list[Grip] = Field(description="The raw entries, in time order, with their ids.")


def add_timeline_tools(mcp: MCPServer, who: Callable[[Context], Awaitable[Caller]],
                       guard: Callable[[Context], AbstractAsyncContextManager[None]]) -> None:
    """Add the tools to ``mcp`` (``who``, ``guard``: as :func:`gateway.mcp_context.
    add_context_tool`'s)."""
    @tool(mcp, "Memory by time", read_only_hint=True)
    async def timeline(ctx: Context, at: At = None, depth: Depth = 1) -> Annotated[
            CallToolResult, Timeline]:
        """Browse your memory by time, summaries first: the node of the year, month
        (2023-05), week or day (2023-05-08) you name, or the root, with its span, entry
        count, top tags, keywords, the actors and a summary, and its children to `depth`
        levels. Drill down by calling again with a child's id; a segment's `ref` goes to
        `expand` for the raw entries."""
        async with guard(ctx):
            caller = await who(ctx)
            tree = await caller.memory.timeline(None, at, depth)
        return answer(Timeline(node=tree.as_dict()))

    @tool(mcp, "A segment's raw entries", read_only_hint=True)
    async def expand(ctx: Context, segment: Ref) -> Annotated[CallToolResult, Segment]:
        """The raw entries under a segment of your timeline (its `ref`), with their ids,
        to verify or cite what its summary says."""
        async with guard(ctx):
            caller = await who(ctx)
            got = await caller.memory.expand(segment)
        return answer(Segment(segment=segment, entries=[
            Grip(id=e.id, scope=e.scope, created_at=e.created_at, value=e.value) for e in got]))
