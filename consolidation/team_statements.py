"""Team statements on a slot: the team's current truth of what its members stated.

A member's entry that states one fact (:func:`consolidation.facts.extract_facts`, a
single slot: ``Acme Corp lives in Springfield``) is pooled in the team's root scope under
``team:<slot>`` (:class:`retrieval.belief_keys.BeliefKey`, kind left out: every statement
on the slot keys alike), not under its content: a statement keyed by content is never
superseded, so an outdated one ("Springfield") would outrank the current one
("Shelbyville") in a recall of the team.

The entry on a slot carries a ledger: per claim (the object, and whether negated) and
member, that member's latest statement of it (agent, entry, scope, time, and when it was
said: its original's time and write order, :func:`consolidation.claims.said_order`).
The *current* claim is the one stated last; the entry states it (``attribution``: every
member who said it, as many times as they said it counting once), and lists the contrary
statements said before it (``earlier``: the history, with their text). The ledger only
grows by later statements per (claim, member), so the outcome does not depend on the
order batches arrive in, and a replayed batch changes nothing (no draft). A batch that
changes the ledger supersedes the held entry (``revision: changed`` when the current
claim changed): the same statement from several members is one entry with several
attributions, and a newer contrary statement supersedes the older one, whichever member
said either. The ledger holds at most one record per (claim, member): its size does not
grow with how often a statement is repeated. A member's entry edited in place to another
claim states it after its old one (its version orders them); re-read at a later version
still stating the same claim (a reinforcement), it adds nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from blackboard import Entry
from retrieval.belief_keys import BeliefKey

from .claims import said_order
from .draft import Draft
from .facts import extract_facts
from .kinds import canonical_key
from .signals import actors_of, claimed_actors_of, occurred_at, origin_id
from .text import entry_text, union_tags
from .transformer import TransformContext

__all__ = ["KEY_PREFIX", "slot_draft", "statement_slot"]

#: A team statement's key: ``team:`` and the slot it states.
KEY_PREFIX = "team:"
#: Metadata not carried from a member or a previous version into the team's entry.
_NOT_CARRIED = frozenset({"agent", "actor", "provenance", "supersedes", "superseded_by",
                          "superseded_at", "status", "content_hash"})

Record = dict[str, Any]


def statement_slot(e: Entry) -> tuple[str, str] | None:
    """``(key, claim)`` of a member's entry stating facts on exactly one slot (its last
    statement there: the later sentence of one entry is the later statement), else None
    (a summary, free text, or facts about several things: pooled by content)."""
    if "summary" in e.tags:
        return None
    facts = extract_facts([e])
    if not facts:
        return None
    slots = set()
    for f in facts:
        parsed = BeliefKey.parse(canonical_key(f))
        slots.add(parsed.slot if parsed is not None else "")
    if len(slots) != 1 or "" in slots:
        return None
    last = max(facts, key=lambda f: f.pos)
    return f"{KEY_PREFIX}{slots.pop()}", ("not:" if last.negated else "") + last.object_key


def _record(e: Entry, claim: str) -> Record:
    # When it was said: its original's time, never after the entry itself was written (a
    # member writing its own stm could name a time to come, and hold the slot for ever).
    said = min(occurred_at(e), e.created_at)
    out: Record = {"agent": next(iter(actors_of(e)), None), "entry": e.id, "scope": e.scope,
                   "at": e.created_at, "said_at": said, "seq": origin_id(e),
                   "claim": claim, "text": entry_text(e), "version": e.version}
    claimed = claimed_actors_of(e)
    if claimed:
        out["claimed_agent"] = claimed
    return out


def _order(r: Record) -> tuple[int, str, int]:
    # An entry edited in place states its new claim after its old one, at the time it
    # was written (not updated_at: a reinforcement must not make an old claim newer).
    return said_order(int(r.get("said_at") or 0), str(r.get("seq") or ""),
                      str(r.get("entry") or ""), int(r.get("version") or 1))


def _restated(ledger: dict[tuple[str, str], Record], held: Record, r: Record) -> bool:
    """Whether ``r`` is ``held``'s own entry at a later version that still states what
    it stated last (reinforced, or edited elsewhere): nothing new was said."""
    return held.get("entry") == r["entry"] and not any(
        o.get("entry") == r["entry"] and _order(o) > _order(held) for o in ledger.values())


def _ledger(prior: Entry | None) -> dict[tuple[str, str], Record]:
    """The prior's records by (claim, agent)."""
    out: dict[tuple[str, str], Record] = {}
    if prior is None:
        return out
    for name in ("attribution", "earlier"):
        got = prior.metadata.get(name)
        for r in got if isinstance(got, list) else []:
            if isinstance(r, dict) and isinstance(r.get("claim"), str):
                out[(r["claim"], str(r.get("agent")))] = r
    return out


def _take(ledger: dict[tuple[str, str], Record],
          members: Sequence[tuple[Entry, str]]) -> list[Entry]:
    """Record in ``ledger`` each member statement later than its member's record of the
    same claim; the entries recorded (the batch's fresh statements)."""
    fresh: list[Entry] = []
    for e, claim in members:
        r = _record(e, claim)
        held = ledger.get((claim, str(r["agent"])))
        if held is None or (_order(r) > _order(held) and not _restated(ledger, held, r)):
            ledger[(claim, str(r["agent"]))] = r
            fresh.append(e)
    return fresh


def _base(prior: Entry | None, mine: list[Entry], head: Entry | None
          ) -> tuple[Any, Mapping[str, Any], frozenset[str], int, float]:
    """Value, metadata, tags, reinforcements and importance of the next version: the
    prior's with the fresh statements of its claim ``mine`` added when the claim stays
    (``head`` None), else the statement said last ``head``'s with those of ``mine``."""
    if head is None:
        assert prior is not None
        tags = union_tags([prior.tags - {"superseded"}, *(e.tags for e in mine)])
        reinforcements = prior.reinforcements + len(mine) + sum(e.reinforcements for e in mine)
        return (prior.value, prior.metadata, tags, reinforcements,
                max(e.importance for e in [prior, *mine]))
    return (head.value, head.metadata, union_tags([e.tags for e in mine]),
            sum(e.reinforcements for e in mine), max(e.importance for e in mine))


def _team_meta(base: Mapping[str, Any], key: str, records: list[Record],
               changed: bool) -> dict[str, Any]:
    """The next version's metadata from ``base``: the current claim (said last in
    ``records``, in said order), who said it and the contrary statements before it."""
    current = records[-1]["claim"]
    attribution = [r for r in records if r["claim"] == current]
    agents = sorted({str(r["agent"]) for r in attribution if r.get("agent")})
    meta = {k: v for k, v in base.items() if k not in _NOT_CARRIED}
    meta.pop("revision", None)
    claimed = sorted({c for r in attribution for c in r.get("claimed_agent", [])}
                     - set(agents))
    if claimed:
        meta["claimed_agents"] = claimed
    if changed:
        meta["revision"] = "changed"
    meta.update(kind="team", slot=key[len(KEY_PREFIX):], claim=current, agents=agents,
                attribution=attribution, earlier=[r for r in records if r["claim"] != current],
                duplicates=len(attribution) - 1,
                merge="exact" if len(attribution) > 1 else "none")
    return meta


def slot_draft(key: str, members: Sequence[tuple[Entry, str]], ctx: TransformContext,
               provenance: Any) -> Draft | None:
    """The team's next version of the statement on ``key`` after ``members`` (entries
    with their claims, in time order), or None when they change nothing (every one is
    already recorded, or older than its member's record of the same claim).
    ``provenance(ids)`` makes the draft's provenance."""
    prior = ctx.existing.get(key)
    ledger = _ledger(prior)
    fresh = _take(ledger, members)
    if not fresh:
        return None
    records = sorted(ledger.values(), key=_order)
    current = records[-1]["claim"]
    same = prior is not None and prior.metadata.get("claim") == current
    claim_of = {e.id: c for e, c in members}
    mine = [e for e in fresh if claim_of[e.id] == current]  # fresh statements of it
    # Stated last: when the claim changed, it is in this batch.
    head = None if same else {e.id: e for e, _ in members}[str(records[-1]["entry"])]
    value, base, tags, reinforcements, importance = _base(prior, mine, head)
    meta = _team_meta(base, key, records, prior is not None and not same)
    attribution = meta["attribution"]
    if head is not None:
        reinforcements += len(attribution) - 1
    first = attribution[0].get("agent")
    return Draft(
        value=value,
        provenance=provenance([e.id for e in fresh]),
        tags=tags,
        metadata=meta,
        importance=importance,
        key=key,
        reinforcements=reinforcements,
        reinforced_by=tuple(a for a in meta["agents"] if a != first),
        supersedes=prior.id if prior is not None else None,
    )
