"""REST ``POST /v1/feedback``: whether recalled entries helped (``AgentMemory.feedback``,
:mod:`memory.utility`): per-agent use counts ranking can use (the ``useful`` lens), the
pool's reinforcement for a helpful entry, contradicting evidence against a misleading
belief. Refusals before anything is written: 422 naming ``entry_ids`` or ``helpful``; 404
naming ``entry_ids`` for an id in no scope the caller may read (unknown or another
agent's: not told apart); 403 for an entry the caller may read but not write
(``collective``), or when Redis refuses.
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from blackboard import InvalidArgument, NotFound
from blackboard.feedback import MAX_FEEDBACK_IDS
from memory.request_bodies import ENTRY_ID_SCHEMA
from memory.response_bodies import EntryOut

from ..refusals import GatewayError
from .deps import CallerDep
from .json_route import json_post
from .responses import BODY_ERRORS

router = APIRouter(prefix="/v1", tags=["memory"])


class FeedbackIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    entry_ids: list[str] = Field(min_length=1, max_length=MAX_FEEDBACK_IDS, json_schema_extra={
        "items": {"type": "string", **ENTRY_ID_SCHEMA}}, description=(
        "Ids of recalled entries (of the caller's own or its teams' scopes)."))
    helpful: StrictBool = Field(description="true: they helped; false: they misled.")


class VerdictOut(BaseModel):
    id: str
    scope: str
    changed: bool = Field(description="The caller's verdict on it is new or different.")
    reinforced: bool = Field(description="This call reinforced it (once per agent).")
    uses: int = Field(description="Agents that gave it feedback.")
    helpful: int = Field(description="Of those, the agents that found it helpful.")
    strength: float


class FeedbackOut(BaseModel):
    helpful: bool
    entries: list[VerdictOut]
    evidence: list[EntryOut] = Field(description=(
        "Contradicting evidence written against misleading beliefs (in the caller's stm)."))


def _refused(status: int, kind: str, exc: Exception) -> GatewayError:
    """The library's refusal with the field it is about (its message names it too)."""
    err = GatewayError(str(exc), field="entry_ids")
    err.status, err.kind = status, kind
    return err


@json_post(router, "/feedback", response_model=FeedbackOut, responses=BODY_ERRORS)
async def feedback(body: FeedbackIn, caller: CallerDep) -> FeedbackOut:
    """Say whether recalled entries helped; each agent's verdict counts once per entry."""
    try:
        r = await caller.memory.feedback(body.entry_ids, body.helpful)
    except NotFound as exc:
        raise _refused(404, "NotFound", exc) from exc
    except InvalidArgument as exc:
        raise _refused(422, "InvalidArgument", exc) from exc
    return FeedbackOut(
        helpful=r.helpful, evidence=[EntryOut.of(e) for e in r.evidence],
        entries=[VerdictOut(id=v.entry_id, scope=v.scope, changed=v.changed,
                            reinforced=v.reinforced, uses=v.uses, helpful=v.helpful,
                            strength=v.strength) for v in r.verdicts])
