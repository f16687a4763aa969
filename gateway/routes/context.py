"""REST ``POST /v1/context``: what memory holds on a query as prompt-ready text within a
token budget (``AgentMemory.context``, :mod:`memory.context`), with each citation's entry.
Refusals before any work: 422 naming ``budget_tokens``, ``query`` or ``levels``."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, field_validator

from memory.context import MAX_BUDGET_TOKENS
from memory.request_bodies import LEVEL_NAMES, SCOPE_SCHEMA, check_level
from memory.response_bodies import EntryOut

from .deps import CallerDep
from .json_route import json_post
from .responses import BODY_ERRORS

router = APIRouter(prefix="/v1", tags=["memory"])


class ContextIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=4096, description="What the prompt is about.")
    budget_tokens: int = Field(1500, ge=1, le=MAX_BUDGET_TOKENS, description=(
        "The most tokens the context's text may take (estimated from above)."))
    levels: list[str] | None = Field(None, json_schema_extra={
        "minItems": 1, "items": {"enum": list(LEVEL_NAMES)}}, description=(
        "Levels to draw from (default: every level the caller may read)."))
    scopes: list[str] | None = Field(None, json_schema_extra={
        "minItems": 1, "items": SCOPE_SCHEMA})

    @field_validator("levels")
    @classmethod
    def _known_levels(cls, v: list[str] | None) -> list[str] | None:
        for name in v or ():
            check_level(name)
        return v


class ContextOut(BaseModel):
    text: str = Field(description="Ready to paste into a prompt: beliefs, then memories, "
                                  "each with a citation id in brackets.")
    tokens: int
    budget_tokens: int
    left_out: int = Field(description="Relevant hits that did not fit the budget.")
    citations: dict[str, EntryOut] = Field(description="Citation id -> the entry it cites.")


@json_post(router, "/context", response_model=ContextOut, responses=BODY_ERRORS)
async def context(body: ContextIn, caller: CallerDep) -> ContextOut:
    """Prompt-ready context: current beliefs first (confidence, last supported, evidence
    count), then the relevant memories, each once, never over ``budget_tokens``."""
    c = await caller.memory.context(body.query, budget_tokens=body.budget_tokens,
                                    levels=body.levels, scopes=body.scopes)
    return ContextOut(text=c.text, tokens=c.tokens, budget_tokens=c.budget_tokens,
                      left_out=c.left_out,
                      citations={k: EntryOut.of(e) for k, e in c.citations.items()})
