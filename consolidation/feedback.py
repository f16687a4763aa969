"""Confirmations and corrections of beliefs, as evidence the semantic transformer weighs.

``AgentMemory.confirm`` / ``correct`` (memory.feedback) never rewrite a belief: each writes
a *feedback entry* into the agent's stm, where the semantic edge reads its evidence. The
entry is an explicit triple (``metadata`` subject, predicate, object, negated: see
:mod:`.facts`), so the transformer reads it as one more fact under the belief's canonical
key, plus ``metadata["feedback"]`` (``confirm`` or ``correct``), the belief it answers and
its scope; who gave it and when are the entry's author (established by the write script)
and time. The belief's confidence reflects it at the next consolidation of that edge
(not at once: the draft that takes the key is the transformer's, with every other piece
of evidence of its batch, and the layer under consolidation cannot run it).

Weights: a confirmation or correction comes from the operator or user, who is the
authority on their own facts; its fact weighs :data:`FEEDBACK_WEIGHT` times an observed
one (before its age decay). A correction therefore supersedes a belief resting on one
observation at once (2 against 1), and one resting on two mentions when it is the more
recent (a tie goes to the newest); a belief many sources back takes more than one
correction. ``confidence_components["operator_confirmed"]`` counts the confirmations among
the drafted claim's support.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from blackboard import Entry

from .facts import Fact, facts_from_text, statement
from .text import slug

__all__ = ["FEEDBACK_WEIGHT", "feedback_kind", "feedback_weight", "read_claim", "weigh_feedback"]

#: How many observed facts one confirmation or correction weighs.
FEEDBACK_WEIGHT = 2.0
KINDS = ("confirm", "correct")


def feedback_kind(e: Entry | None) -> str | None:
    """``confirm`` / ``correct`` for a feedback entry, else None."""
    k = e.metadata.get("feedback") if e is not None else None
    return k if k in KINDS else None


def feedback_weight(e: Entry | None) -> float:
    """The weight factor of the facts ``e`` states (1 for an observation)."""
    return FEEDBACK_WEIGHT if feedback_kind(e) is not None else 1.0


def weigh_feedback(facts: list[Fact], by_id: Mapping[str, Entry]) -> list[Fact]:
    """``facts`` with the weight of those a feedback entry states multiplied by
    :data:`FEEDBACK_WEIGHT`."""
    return [replace(f, weight=f.weight * feedback_weight(by_id.get(f.source)))
            for f in facts]


def read_claim(belief: Mapping[str, Any], claim: str) -> dict[str, Any] | None:
    """The explicit triple a correction ``claim`` of ``belief`` (its value) asserts:

    * a statement of the belief's subject and predicate (``Acme Corp lives in
      Shelbyville``, ``Acme Corp does not live in Springfield``) as it reads;
    * else, when no statement of the text patterns is found, the claim itself as the new
      object (``Shelbyville``);

    None when the claim is a statement about another subject or predicate (it would not
    land under the belief's canonical key)."""
    subject, predicate = str(belief.get("subject", "")), str(belief.get("predicate", ""))
    text = " ".join(claim.split()).strip(" .!")
    if not text:
        return None
    found = facts_from_text(text)
    if found:
        s, p, o, neg = found[0]
        if slug(s) != slug(subject) or p != predicate:
            return None
    else:
        o, neg = text, False
    return {"subject": subject, "predicate": predicate, "object": o, "negated": neg,
            "statement": statement(subject, predicate, o, neg)}
