"""MCP tool ``feedback``: whether recalled memories helped, as REST's ``POST /v1/feedback``
(:mod:`memory.utility`). Compact answer: per memory, the counts after the call."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field, StrictBool

from blackboard.feedback import MAX_FEEDBACK_IDS

from .caller import Caller
from .mcp_render import answer, tool

__all__ = ["FeedbackGiven", "add_feedback_tool"]

# Module level: the SDK reads the tools' annotations by name from this module's globals.
Ids = Annotated[list[Annotated[str, Field(min_length=1, max_length=64)]], Field(
    min_length=1, max_length=MAX_FEEDBACK_IDS, description=(
        "Ids of memories a recall gave you (from your own or your teams' memory)."))]
Helpful = Annotated[StrictBool, Field(description=(
    "true if they helped with your task, false if they were wrong or misleading."))]


class Judged(BaseModel):
    id: str
    uses: int = Field(description="Agents that gave this memory feedback.")
    helpful: int = Field(description="Of those, the agents it helped.")


class FeedbackGiven(BaseModel):
    memories: list[Judged]
    contradicted: list[str] = Field(description=(
        "Beliefs your 'misleading' feedback now counts against (their ids)."))


def add_feedback_tool(mcp: MCPServer, who: Callable[[Context], Awaitable[Caller]],
                      guard: Callable[[Context], AbstractAsyncContextManager[None]]) -> None:
    """Add the tool to ``mcp``; ``who`` and ``guard`` are
    :func:`gateway.mcp_server.build_mcp`'s (the caller, and failures as tool errors)."""
    @tool(mcp, "Feedback on recalled memories", destructive_hint=False, idempotent_hint=True)
    async def feedback(ctx: Context, ids: Ids,
                       helpful: Helpful) -> Annotated[CallToolResult, FeedbackGiven]:
        """Tell your memory whether memories a recall gave you helped: helpful ones are
        reinforced and rank higher for the 'useful' lens; a misleading belief gets evidence
        against it. Your feedback counts once per memory (repeating it changes nothing).
        Returns each memory's feedback counts."""
        async with guard(ctx):
            caller = await who(ctx)
            r = await caller.memory.feedback(ids, helpful)
        return answer(FeedbackGiven(
            memories=[Judged(id=v.entry_id, uses=v.uses, helpful=v.helpful)
                      for v in r.verdicts],
            contradicted=[str(e.metadata["belief"]) for e in r.evidence]))
