"""Goal-aware recall: ``MemoryQuery(context=RetrievalContext(goal=...))``.

The goal (what the agent is working toward: "close the Globex invoice dispute") is searched
as a second query over the same scopes and filters, and the two rankings are blended:
each list's scores are divided by its best, and a hit's score becomes ``(1 - weight) *
query + weight * goal`` (0 for a list it is missing from). With the default weight 0.3 a
hit matching both rises above one matching the query alone, and one matching only the goal
ranks below every hit scoring at least 0.43 of the query's best: the goal biases, the
query decides. Pure logic over ranked hits; the retriever runs the two searches.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from blackboard import InvalidArgument

from .scoring import ScoredEntry

Q = TypeVar("Q", bound=BaseModel)

__all__ = ["GOAL_DEPTH", "MAX_GOAL", "RetrievalContext", "blend_goal", "with_context"]

#: Each of the two searches ranks this many candidates per hit asked for.
GOAL_DEPTH = 3
#: Longest goal, in characters.
MAX_GOAL = 2000


class RetrievalContext(BaseModel):
    """What a recall is for: ``goal`` text blended into the ranking with ``weight``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    goal: str = Field(min_length=1, max_length=MAX_GOAL, json_schema_extra={"pattern": r"\S"})
    weight: float = Field(default=0.3, ge=0.0, le=1.0)

    @field_validator("goal")
    @classmethod
    def _text(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("goal must be non-empty text")
        return v

    @field_validator("weight", mode="before")
    @classmethod
    def _number(cls, v: object) -> object:
        if isinstance(v, bool | str):
            raise ValueError("must be a JSON number")
        return v


def with_context(q: Q, context: RetrievalContext | None) -> Q:
    """``q`` (a :class:`~retrieval.query.MemoryQuery`) with ``context`` set, when given
    (validated again, so a goal with ``order="newest"`` is refused)."""
    if context is None:
        return q
    if not isinstance(context, RetrievalContext):
        raise InvalidArgument(f"context: a RetrievalContext, got {type(context).__name__}")
    return type(q).model_validate({**q.model_dump(exclude={"lens"}), "context": context})


def _normalised(hits: list[ScoredEntry]) -> dict[tuple[str, str], float]:
    top = max((h.score for h in hits), default=0.0)
    if top <= 0.0:
        return {(h.scope, h.entry.id): 0.0 for h in hits}
    return {(h.scope, h.entry.id): h.score / top for h in hits}


def blend_goal(query_hits: list[ScoredEntry], goal_hits: list[ScoredEntry],
               weight: float) -> list[ScoredEntry]:
    """The union of both rankings by the blended score, best first (ties: query order,
    then goal order)."""
    q, g = _normalised(query_hits), _normalised(goal_hits)
    first: dict[tuple[str, str], ScoredEntry] = {}
    for h in (*query_hits, *goal_hits):
        first.setdefault((h.scope, h.entry.id), h)
    score = {k: (1.0 - weight) * q.get(k, 0.0) + weight * g.get(k, 0.0) for k in first}
    order = sorted(first, key=lambda k: -score[k])
    return [replace(first[k], score=score[k]) for k in order]
