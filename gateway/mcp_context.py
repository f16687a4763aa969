"""MCP tool ``context``: what memory holds on a question as text ready for a prompt, within
a token budget, as REST's ``POST /v1/context`` (:mod:`memory.context`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from memory.context import MAX_BUDGET_TOKENS

from .caller import Caller
from .mcp_render import answer, tool

__all__ = ["PromptContext", "add_context_tool"]

# Module level: the SDK reads the tools' annotations by name from this module's globals.
Query = Annotated[str, Field(min_length=1, max_length=4096, description=(
    "What the prompt is about: the question or task, in natural language."))]
Budget = Annotated[int, Field(ge=1, le=MAX_BUDGET_TOKENS, description=(
    "The most tokens the text may take (estimated from above)."))]


class Cited(BaseModel):
    id: str
    scope: str


class PromptContext(BaseModel):
    text: str = Field(description="Beliefs, then memories, each with a citation id.")
    tokens: int
    left_out: int = Field(description="Relevant memories that did not fit.")
    citations: dict[str, Cited] = Field(description="Citation id -> the memory's id, scope.")


def add_context_tool(mcp: MCPServer, who: Callable[[Context], Awaitable[Caller]],
                     guard: Callable[[Context], AbstractAsyncContextManager[None]]) -> None:
    """Add the tool to ``mcp``; ``who`` and ``guard`` are
    :func:`gateway.mcp_server.build_mcp`'s (the caller, and failures as tool errors)."""
    @tool(mcp, "Context for a prompt", read_only_hint=True)
    async def context(ctx: Context, query: Query,
                      budget_tokens: Budget = 1500) -> Annotated[CallToolResult, PromptContext]:
        """Get what your memory holds on a question as text to put in your prompt, within
        a token budget: current beliefs first (confidence, when last supported, evidence
        count), then relevant memories best first, each once, each with a citation id
        such as [m1]. Returns the text, its token count and what each citation id is."""
        async with guard(ctx):
            caller = await who(ctx)
            c = await caller.memory.context(query, budget_tokens=budget_tokens)
        return answer(PromptContext(
            text=c.text, tokens=c.tokens, left_out=c.left_out,
            citations={k: Cited(id=e.id, scope=e.scope) for k, e in c.citations.items()}))
