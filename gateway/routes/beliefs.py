"""REST ``/v1/beliefs/{id}/confirm|correct``: feedback on a belief, written as evidence.

Each call writes one feedback entry into the caller's stm (``memory.feedback``): the
belief itself is never rewritten; it reflects the feedback at its next consolidation.
Refusals before anything is written: 422 naming ``belief_id`` (not a belief, or not an
entry id) or ``claim``, 403 for a ``scope`` the caller may not read, 404 for no such belief.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from pydantic import BaseModel, ConfigDict, Field

from memory.feedback import MAX_CLAIM
from memory.request_bodies import ENTRY_ID_SCHEMA, SCOPE_SCHEMA
from memory.response_bodies import EntryOut

from .deps import CallerDep
from .json_route import json_post
from .responses import BODY_ERRORS

router = APIRouter(prefix="/v1/beliefs", tags=["beliefs"])

BeliefIdPath = Annotated[str, Path(json_schema_extra=ENTRY_ID_SCHEMA)]


class ConfirmIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scope: str | None = Field(None, json_schema_extra=SCOPE_SCHEMA, description=(
        "The belief's scope, if known (else every scope the caller may read is searched)."))


class CorrectIn(ConfirmIn):
    claim: str = Field(min_length=1, max_length=MAX_CLAIM, description=(
        "The corrected claim: the new value ('Shelbyville') or a sentence with the "
        "belief's subject and predicate ('Acme Corp lives in Shelbyville')."))


class FeedbackOut(BaseModel):
    """The feedback entry written (the evidence), and the belief it answers."""

    belief: str
    belief_scope: str
    evidence: EntryOut


def _out(e: EntryOut) -> FeedbackOut:
    return FeedbackOut(belief=str(e.metadata["belief"]),
                       belief_scope=str(e.metadata["belief_scope"]), evidence=e)


@router.post("/{belief_id}/confirm", status_code=201, response_model=FeedbackOut,
             responses=BODY_ERRORS)
async def confirm(belief_id: BeliefIdPath, caller: CallerDep,
                  body: ConfirmIn | None = None) -> FeedbackOut:
    """Confirm a belief: operator-confirmed evidence for its claim."""
    e = await caller.memory.confirm(belief_id, scope=body.scope if body else None)
    return _out(EntryOut.of(e))


@json_post(router, "/{belief_id}/correct", status_code=201, response_model=FeedbackOut,
           responses=BODY_ERRORS)
async def correct(belief_id: BeliefIdPath, body: CorrectIn, caller: CallerDep) -> FeedbackOut:
    """Correct a belief: evidence against it, for ``claim``; supersedes it when it wins."""
    e = await caller.memory.correct(belief_id, body.claim, scope=body.scope)
    return _out(EntryOut.of(e))
