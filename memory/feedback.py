"""Confirm or correct a belief: evidence with provenance, never a rewrite of the belief.

``confirm(belief_id)`` and ``correct(belief_id, claim)`` each write one *feedback entry*
into the calling agent's stm: an explicit triple under the belief's canonical key (the
belief's own claim, or the corrected one), ``metadata["feedback"]`` (``confirm`` /
``correct``), the belief's id and scope. Who gave it is the entry's author (the agent's
own scope: the write script establishes it) and when is its ``created_at``. The semantic
edge reads it with the rest of the agent's stm (consolidation.feedback says how much it
weighs), so the belief's confidence reflects it at the next consolidation, and a winning
correction supersedes the belief then; a team belief follows from the agent's belief
(consolidation.team_beliefs).

Refusals, all before anything is written: an id not of the entry-id form or naming an
entry that is no belief -> :class:`NotABelief`; a ``scope`` the agent may not read ->
AccessDenied; no such belief in the scope (or, without one, in any scope the agent may
read) -> NotFound; a claim empty, over :data:`MAX_CLAIM` characters or about another
subject or predicate -> :class:`InvalidClaim`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from blackboard import Entry, NotFound
from blackboard.ids import is_entry_id

from .catalog import catalog
from .errors import InvalidClaim, NotABelief
from .levels import MemoryLevel

if TYPE_CHECKING:
    from .agent import AgentMemory

__all__ = ["MAX_CLAIM", "confirm", "correct", "find_belief"]

#: Longest correction claim, in characters.
MAX_CLAIM = 1000
#: A belief names these in its value (semantic and team beliefs do).
_BELIEF_FIELDS = ("subject", "predicate", "object", "canonical_key")


def _is_belief(e: Entry) -> bool:
    v = e.value
    return isinstance(v, dict) and all(isinstance(v.get(k), str) for k in _BELIEF_FIELDS)


async def find_belief(mem: AgentMemory, belief_id: str, scope: str | None = None) -> Entry:
    """The belief ``belief_id`` in ``scope`` (checked readable), else in the first
    readable scope holding it. Refusals as the module says."""
    if not isinstance(belief_id, str) or not is_entry_id(belief_id):
        raise NotABelief(f"belief_id: {str(belief_id)[:40]!r} is not an entry id")
    candidates = [mem.access.check_read(scope)] if scope else mem.readable_scopes()
    held = await mem.bb.reads.holding(belief_id, candidates)
    for sid, hit in zip(candidates, held, strict=True):
        if not hit:
            continue
        try:
            e = await mem.bb.scope(sid).get(belief_id)
        except NotFound:
            continue  # expired or retired meanwhile: not a belief one can act on
        if not _is_belief(e):
            raise NotABelief(f"belief_id: entry {belief_id!r} in scope {sid!r} is not a "
                             "belief (no subject, predicate, object and canonical key)")
        return e
    where = f"scope {scope!r}" if scope else f"the scopes agent {mem.agent_id!r} may read"
    raise NotFound(f"no belief {belief_id!r} in {where}")


def _metadata(belief: Entry, kind: str, triple: dict[str, Any]) -> dict[str, Any]:
    return {"subject": triple["subject"], "predicate": triple["predicate"],
            "object": triple["object"], "negated": bool(triple["negated"]),
            "feedback": kind, "belief": belief.id, "belief_scope": belief.scope,
            "canonical_key": belief.value["canonical_key"]}


async def _write(mem: AgentMemory, belief: Entry, kind: str, triple: dict[str, Any],
                 text: str) -> Entry:
    return await mem.store({"text": text}, MemoryLevel.STM,
                           tags={"feedback", f"feedback:{kind}", "fact"},
                           metadata=_metadata(belief, kind, triple), importance=0.9)


async def confirm(mem: AgentMemory, belief_id: str, scope: str | None = None) -> Entry:
    """Write a confirmation of the belief's claim; -> the feedback entry."""
    b = await find_belief(mem, belief_id, scope)
    v = b.value
    triple = {k: v[k] for k in ("subject", "predicate", "object")}
    triple["negated"] = bool(v.get("negated", False))
    said = v.get("statement") or f"{v['subject']} {v['predicate']} {v['object']}"
    return await _write(mem, b, "confirm", triple, f"{said} (confirmed)")


async def correct(mem: AgentMemory, belief_id: str, claim: str,
                  scope: str | None = None) -> Entry:
    """Write a correction asserting ``claim`` against the belief; -> the feedback entry."""
    if not isinstance(claim, str) or not claim.strip():
        raise InvalidClaim("claim: a correction needs a non-empty claim")
    if len(claim) > MAX_CLAIM:
        raise InvalidClaim(f"claim: at most {MAX_CLAIM} characters, got {len(claim)}")
    b = await find_belief(mem, belief_id, scope)
    reader = getattr(catalog(), "read_claim", None)  # a catalog without one: a bare value
    triple = reader(b.value, claim) if reader is not None else {
        **{k: b.value[k] for k in ("subject", "predicate")}, "object": claim.strip(),
        "negated": False, "statement": claim.strip()}
    if triple is None:
        raise InvalidClaim(
            f"claim: {claim[:80]!r} is not about {b.value['subject']!r} "
            f"{str(b.value['predicate']).replace('_', ' ')!r}; say the new value, or a "
            f"sentence with that subject and predicate")
    if (triple["object"].casefold(), triple["negated"]) == (
            str(b.value["object"]).casefold(), bool(b.value.get("negated", False))):
        raise InvalidClaim("claim: it restates the belief; confirm it instead")
    return await _write(mem, b, "correct", triple, str(triple["statement"]))
