"""Facts an LLM reads in a batch (the ``semantic`` transformer's LLM path): its output
schema, bounded by the batch (:mod:`.llm.schema`), and the facts it yields, each citing
the entry that states it."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, Field

from blackboard import Entry
from retrieval.belief_keys import KINDS

from .facts import Fact, canonical_predicate
from .llm.errors import InvalidLLMOutput
from .llm.protocol import LLMClient
from .llm.schema import narrowed
from .prompt import render_batch
from .signals import actors_of, occurred_at, origin_id
from .text import slug

__all__ = ["FACTS_PER_ENTRY", "FactOut", "FactsOut", "facts_out", "llm_facts"]

#: A belief's kind as the schema lists it: the names of :data:`KINDS`, so the model's
#: grammar offers exactly the kinds a canonical key may carry.
Kind = Literal[KINDS]  # type: ignore[valid-type]


class FactOut(BaseModel):
    entry: int = Field(description="Index [i] of the entry stating the fact.")
    subject: str = Field(min_length=1, max_length=120)
    predicate: str = Field(
        min_length=1, max_length=40, description="Short verb phrase, e.g. 'lives in', 'prefers'."
    )
    object: str = Field(min_length=1, max_length=200)
    negated: bool = False
    kind: Kind | None = Field(default=None, description="What kind of belief, when clear.")


class FactsOut(BaseModel):
    """LLM output of ``semantic``."""

    facts: list[FactOut]


#: Facts the model may state per entry of the batch: a bound on its output, so a model
#: repeating itself stops (an entry stating more is rare; the extractor still reads it).
FACTS_PER_ENTRY = 4


@lru_cache(maxsize=64)
def facts_out(n: int) -> type[FactsOut]:
    """:class:`FactsOut` for a batch of ``n`` entries: ``entry`` cites one of them, and at
    most ``FACTS_PER_ENTRY * n`` facts (see :mod:`consolidation.llm.schema`)."""
    fact = narrowed(
        FactOut,
        entry=(int, Field(ge=0, le=n - 1, description="Index [i] of the entry stating it.")),
    )
    return narrowed(FactsOut, facts=(list[fact], Field(max_length=FACTS_PER_ENTRY * n)))  # type: ignore[valid-type]


_SYSTEM = (
    "Extract durable facts (subject, predicate, object) that the entries state about "
    "people, projects, tools or the world. Only facts stated in the entries; mark a "
    "denied fact negated. Use short predicates such as 'is', 'has', 'uses', 'prefers', "
    "'lives in'. Give the index of the entry stating each fact."
)


async def llm_facts(es: list[Entry], llm: LLMClient) -> list[Fact]:
    """The facts ``llm`` reads in ``es`` (each citing the entry stating it), in the order
    it listed them; an invalid citation is invalid output (repaired, else dead-lettered)."""
    out = await llm.complete_json(_SYSTEM, render_batch(es), facts_out(len(es)))
    facts: list[Fact] = []
    for f in out.facts:
        # The schema bounds it; an LLMClient that does not validate would make a
        # negative index quietly cite the last entry.
        if not 0 <= f.entry < len(es):
            raise InvalidLLMOutput(f"fact cites entry [{f.entry}] of {len(es)}")
        e = es[f.entry]
        actors = actors_of(e)
        pred = canonical_predicate(f.predicate)
        if slug(f.subject) and slug(f.object) and pred:
            facts.append(
                Fact(
                    f.subject.strip(),
                    pred,
                    f.object.strip(),
                    f.negated,
                    e.id,
                    occurred_at(e),
                    actors[0] if actors else None,
                    kind=f.kind,
                    # in the order the model listed them: its reading of the text
                    pos=sum(g.source == e.id for g in facts),
                    seq=origin_id(e),
                )
            )
    return facts
