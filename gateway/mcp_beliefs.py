"""MCP tools ``confirm`` and ``correct``: feedback on a belief, as REST's
``/v1/beliefs/{id}/confirm|correct`` (:mod:`gateway.routes.beliefs`). Each writes one
feedback entry (the evidence, with its author and time) into the caller's stm; the belief
reflects it at its next consolidation and is never rewritten in place."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from blackboard import Entry
from memory.feedback import MAX_CLAIM

from .caller import Caller
from .mcp_render import answer, tool

__all__ = ["Feedback", "add_belief_tools"]


# Module level: the SDK reads the tools' annotations by name from this module's globals.
BeliefId = Annotated[str, Field(min_length=1, max_length=64, description=(
    "The belief's id (a semantic fact, as recall shows it)."))]
Scope = Annotated[str | None, Field(description=(
    "The belief's scope, if known (else every scope you may read is searched)."))]
Claim = Annotated[str, Field(min_length=1, max_length=MAX_CLAIM, description=(
    "What is true instead: the new value ('Shelbyville') or a sentence with the "
    "belief's subject ('Acme Corp lives in Shelbyville')."))]


class Feedback(BaseModel):
    id: str = Field(description="The feedback entry written (the evidence).")
    scope: str = Field(description="Where it was written (your short-term memory).")
    belief: str
    belief_scope: str


def _out(e: Entry) -> Feedback:
    return Feedback(id=e.id, scope=e.scope, belief=str(e.metadata["belief"]),
                    belief_scope=str(e.metadata["belief_scope"]))


def add_belief_tools(mcp: MCPServer, who: Callable[[Context], Awaitable[Caller]],
                     guard: Callable[[Context], AbstractAsyncContextManager[None]]) -> None:
    """Add the tools to ``mcp``; ``who`` and ``guard`` are
    :func:`gateway.mcp_server.build_mcp`'s (the caller, and failures as tool errors)."""
    @tool(mcp, "Confirm a belief", destructive_hint=False)
    async def confirm(ctx: Context, belief_id: BeliefId,
                      scope: Scope = None) -> Annotated[CallToolResult, Feedback]:
        """Confirm a belief (a semantic fact from recall) that you found to be right: your
        confirmation is kept as evidence (who and when) and raises its confidence at its
        next consolidation. Returns the feedback entry written."""
        async with guard(ctx):
            caller = await who(ctx)
            return answer(_out(await caller.memory.confirm(belief_id, scope=scope)))

    @tool(mcp, "Correct a belief", destructive_hint=False)
    async def correct(ctx: Context, belief_id: BeliefId, claim: Claim,
                      scope: Scope = None) -> Annotated[CallToolResult, Feedback]:
        """Correct a belief (a semantic fact from recall) that you found to be wrong: your
        correction is kept as evidence against it (who and when) and replaces it at its
        next consolidation when it outweighs the support. Returns the feedback entry
        written."""
        async with guard(ctx):
            caller = await who(ctx)
            return answer(_out(await caller.memory.correct(belief_id, claim, scope=scope)))
