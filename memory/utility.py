"""Feedback from use: ``AgentMemory.feedback(entry_ids, helpful)`` after a recall.

Each entry gets the agent's verdict (:mod:`blackboard.feedback`, one script per scope):
its ``uses`` (agents that judged it) and ``helpful`` (those finding it helpful) counts,
which ranking reads through the ``useful`` lens (:mod:`retrieval.utility`), and, for a
helpful verdict, the pool's reinforcement (strength and slower decay), counted once per
agent. A misleading verdict on a *belief* (an entry with subject, predicate, object and
canonical key) also writes contradicting evidence: a feedback entry in the agent's own stm
stating the belief's claim negated (``metadata["feedback"] = "misleading"``), which the
semantic edge weighs as one more observation against the claim (:mod:`consolidation.claims`)
at its next consolidation. Its id is deterministic (agent, belief), so an agent adds that
weight once per belief however often it repeats itself.

Refusals, all before anything is written: ``helpful`` not a bool, ``entry_ids`` empty, over
:data:`~blackboard.feedback.MAX_FEEDBACK_IDS` or not entry ids -> InvalidArgument; an id in
no scope the agent may read (unknown, or another agent's: its existence is not told) ->
NotFound naming it; an id in a scope the agent may read but not write (``collective``) ->
AccessDenied. Redis enforces the same: the script needs write permission on the entry's
scope and proves the voter, so a caller lying about its teams is refused by Redis (nothing
written). Counts are written scope by scope, then the evidence entries: a failure between
(a lost connection) leaves the rest to a retry, which changes nothing already recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from blackboard import AccessDenied, Entry, InvalidArgument, NotFound, deterministic_id
from blackboard.feedback import MAX_FEEDBACK_IDS, Verdict, record_feedback
from blackboard.ids import is_entry_id

from .levels import MemoryLevel

if TYPE_CHECKING:
    from .agent import AgentMemory

__all__ = ["FeedbackResult", "check_ids", "feedback", "feedback_result"]

_BELIEF_FIELDS = ("subject", "predicate", "object", "canonical_key")
#: Ids looked up concurrently (each one pipelined EXISTS per readable scope).
_AT_ONCE = 8


@dataclass(frozen=True, slots=True)
class FeedbackResult:
    """What ``feedback`` did: one :class:`~blackboard.feedback.Verdict` per entry (its
    counts after the call), and the contradicting evidence entries written for misleading
    beliefs (empty for a helpful verdict)."""

    helpful: bool
    verdicts: tuple[Verdict, ...]
    evidence: tuple[Entry, ...] = ()


def check_ids(entry_ids: Sequence[str] | str) -> list[str]:
    """``entry_ids`` (one id or several) as distinct ids in order; InvalidArgument naming
    the field otherwise."""
    ids = [entry_ids] if isinstance(entry_ids, str) else entry_ids
    if not isinstance(ids, list | tuple):
        raise InvalidArgument(f"entry_ids: a list of entry ids, got {type(ids).__name__}")
    out = list(dict.fromkeys(ids))
    if not out:
        raise InvalidArgument("entry_ids: at least one entry id")
    if len(out) > MAX_FEEDBACK_IDS:
        raise InvalidArgument(f"entry_ids: at most {MAX_FEEDBACK_IDS} ids, got {len(out)}")
    for i in out:
        if not isinstance(i, str) or not is_entry_id(i):
            raise InvalidArgument(f"entry_ids: {i!r:.80} is not an entry id")
    return out


async def _locate(mem: AgentMemory, ids: list[str]) -> dict[str, list[str]]:
    """scope -> the ids it holds, for every id, each in the first readable scope holding
    it; NotFound / AccessDenied as the module says."""
    readable = mem.readable_scopes()
    held: list[list[bool]] = []
    for k in range(0, len(ids), _AT_ONCE):  # a few round trips at a time: the pool is capped
        held += await asyncio.gather(*(mem.bb.reads.holding(i, readable)
                                       for i in ids[k:k + _AT_ONCE]))
    where: dict[str, list[str]] = {}
    missing = []
    for i, hits in zip(ids, held, strict=True):
        sid = next((s for s, h in zip(readable, hits, strict=True) if h), None)
        if sid is None:
            missing.append(i)
        else:
            where.setdefault(sid, []).append(i)
    if missing:
        raise NotFound(f"entry_ids: no entry {', '.join(map(repr, missing[:5]))}"
                       f"{' ...' if len(missing) > 5 else ''} in the scopes agent "
                       f"{mem.agent_id!r} may read; nothing was recorded")
    writable = set(mem.writable_scopes())
    for sid, got in where.items():
        if sid not in writable:
            raise AccessDenied(
                f"entry_ids: entry {got[0]!r} is in scope {sid!r}, which agent "
                f"{mem.agent_id!r} may read but not write; feedback is recorded on the "
                "entry, so it takes entries of the agent's own and its teams' scopes; "
                "nothing was recorded")
    return where


def _is_belief(e: Entry | None) -> bool:
    v = e.value if e is not None else None
    return isinstance(v, dict) and all(isinstance(v.get(k), str) for k in _BELIEF_FIELDS)


def _contrary(belief: Entry) -> tuple[dict[str, Any], str]:
    """The metadata and text of the evidence against ``belief``'s claim: its triple with
    the negation flipped (a fact the semantic edge reads as contradicting it)."""
    v = belief.value
    neg = not bool(v.get("negated", False))
    said = v.get("statement") or f"{v['subject']} {v['predicate']} {v['object']}"
    meta = {"subject": v["subject"], "predicate": v["predicate"], "object": v["object"],
            "negated": neg, "feedback": "misleading", "belief": belief.id,
            "belief_scope": belief.scope, "canonical_key": v["canonical_key"]}
    return meta, f"misleading: {said}"


async def _contradict(mem: AgentMemory, beliefs: list[Entry]) -> list[Entry]:
    sid = mem.access.check_write(mem.scope_for(MemoryLevel.STM))
    out = []
    for b in beliefs:
        meta, text = _contrary(b)
        eid = deterministic_id("misleading", mem.agent_id, b.scope, b.id)
        out.append(await mem.bb.scope(sid).write(
            {"text": text}, tags={"feedback", "feedback:misleading", "fact"},
            metadata=meta, importance=0.9, entry_id=eid, author=mem.agent_id))
    return out


async def feedback(mem: AgentMemory, entry_ids: Sequence[str] | str,
                   helpful: bool) -> FeedbackResult:
    """Record ``mem``'s agent's verdict on ``entry_ids`` (see the module)."""
    if not isinstance(helpful, bool):
        raise InvalidArgument(f"helpful: must be true or false, got {helpful!r:.40}")
    ids = check_ids(entry_ids)
    where = await _locate(mem, ids)
    beliefs: list[Entry] = []
    if not helpful:  # read before any write: a belief's claim as it stands now
        for sid, got in where.items():
            beliefs += [e for e in await mem.bb.scope(sid).get_many(got)
                        if e is not None and _is_belief(e)]
    verdicts: dict[str, Verdict] = {}
    for sid, got in where.items():
        for v in await record_feedback(mem.bb.scope(sid), got, by=mem.agent_id,
                                       helpful=helpful):
            verdicts[v.entry_id] = v
    evidence = await _contradict(mem, beliefs) if beliefs else []
    return FeedbackResult(helpful, tuple(verdicts[i] for i in ids), tuple(evidence))


def feedback_result(body: dict[str, Any]) -> FeedbackResult:
    """A :class:`FeedbackResult` from the JSON ``POST /v1/feedback`` answers."""
    from .response_bodies import EntryOut

    return FeedbackResult(
        helpful=bool(body["helpful"]),
        verdicts=tuple(Verdict(entry_id=v["id"], scope=v["scope"], changed=v["changed"],
                               reinforced=v["reinforced"], uses=v["uses"],
                               helpful=v["helpful"], strength=v["strength"])
                       for v in body["entries"]),
        evidence=tuple(EntryOut.model_validate(e).to_entry() for e in body["evidence"]))
