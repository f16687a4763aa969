"""``semantic`` (stm -> ltm:semantic): facts grouped by canonical key into beliefs.

For each canonical key touched by the batch (see :mod:`.facts` for extraction and keys)
one draft is written, carrying the believed claim, evidence links with a stance, the
confidence and its components, and a status. Rules:

* Contradiction is judged only within one canonical key. Against a claim, a fact
  *supports* (same object, same polarity), *contradicts* (same object, opposite polarity;
  or, for a functional predicate, a different object with both positive) or is *context*.
  Entries of the batch that mention the subject but assert nothing under the key are
  context links too (weight 0).
* Each fact weighs ``0.5 ** (age / half_life)`` (age to ``ctx.now_ms``). The claim drafted
  is the one with the most supporting weight; the existing belief (``ctx.existing[key]``)
  competes with its stored ``support_weight`` decayed from its ``weighted_at_ms``.
  A later statement updates an earlier one: in this comparison a piece of evidence stated
  before a contrary statement counts ``update_discount`` (0.5) of its weight, so two old
  mentions give way to one newer contrary one, five do not (the belief is ``contested``).
  Ties go to the most recent evidence.
* A confirmation or correction of a belief (:mod:`.feedback`) is a fact like any other,
  weighing ``FEEDBACK_WEIGHT`` times an observed one.
* Each evidence link carries a frozen copy of the entry it cites (:mod:`.evidence`: the
  link never dangles once maintenance drops the entry) and, for a fact, the object it
  asserts (so a team can weigh it: :mod:`.team_beliefs`).
* Evidence stance is relative to the existing belief when there is one, else to the
  drafted claim. The draft never rewrites the existing entry: it ``supersedes`` it, with
  ``revision`` = ``reinforced`` (same claim), ``contested`` (same claim, some
  contradiction) or ``changed`` (a new claim won); ``new`` when nothing existed.
* Confidence components (relative to the drafted claim): ``source_count`` n and
  ``count_score = 1 - exp(-n / count_scale)``; ``agents`` d and ``diversity = d / (d+1)``;
  ``support_weight`` S and ``contradiction_weight`` C with ``balance = S / (S + C)``;
  ``recency = 0.5 ** (age of newest support / half_life)``. ``confidence = balance *
  (0.5 count_score + 0.25 diversity + 0.25 recency)`` in [0, 1].
* Status is ``invalidated`` when the update-discounted weight against the claim outweighs
  its support, else ``stale`` when ``recency < stale_below``, else ``active``;
  ``superseded`` is what the write script makes of the replaced entry, compare-and-set
  (the bridge passes :func:`superseded_metadata` / :func:`superseded_value` as a
  :class:`blackboard.request.Retire`): its metadata and value then read ``status:
  superseded``, ``superseded_by``, ``superseded_at`` and, when the claim changed,
  ``valid_to_ms``. Recall leaves superseded and invalidated beliefs out unless asked
  (:mod:`retrieval.truth`).
* Valid time: ``valid_from_ms`` (value and metadata) is when the claim became what is
  believed: the stored belief's own when it held the same claim, else the first support
  after the last contrary statement. The recorded time is the entry's ``created_at``.
  When a batch itself changes the belief (facts before the final claim's ``valid_from``
  win another claim than the stored one), the earlier claim is drafted first from those
  facts alone and the final version supersedes it (``revision`` ``changed``), so "as of"
  an instant before the change has an answer.

Data model, added by issue 25 (all additive; beliefs written before read compatibly by
:mod:`retrieval.truth`: ``valid_from`` = their earliest support, a superseded one ending at
``superseded_at``): ``valid_from_ms`` (value, metadata), ``valid_to_ms`` /
``superseded_by`` / ``superseded_at`` / ``status: superseded`` on retired versions, status
``invalidated``, param ``update_discount``. Transformer version 2 (draft ids change).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

from blackboard import Entry
from retrieval.truth import CADENCE_DAYS, belief_valid_from

from .draft import Draft
from .evidence import with_snapshots
from .facts import (
    DEFAULT_FUNCTIONAL,
    Fact,
    canonical_key,
    canonical_predicate,
    extract_facts,
    is_functional,
    statement,
)
from .feedback import feedback_kind, weigh_feedback
from .kinds import classify
from .llm.errors import InvalidLLMOutput
from .params import parse_params
from .prompt import render_batch
from .signals import actors_of, chronological
from .text import entry_text, slug, words
from .transformer import TransformContext, register_transformer

__all__ = [
    "BeliefStatus",
    "SemanticParams",
    "SemanticTransformer",
    "Stance",
    "draft_entry",
    "semantic",
    "stance_of",
    "superseded_metadata",
    "superseded_value",
]

_DAY_MS = 86_400_000


class Stance(StrEnum):
    SUPPORT = "support"
    CONTRADICT = "contradict"
    CONTEXT = "context"


class BeliefStatus(StrEnum):
    ACTIVE = "active"
    STALE = "stale"
    SUPERSEDED = "superseded"
    INVALIDATED = "invalidated"


@dataclass(frozen=True, slots=True)
class SemanticParams:
    """``half_life_days``: evidence weight halves every this many days; ``count_scale``:
    k of ``1 - exp(-n/k)``; ``stale_below``: recency under which a belief is stale;
    ``functional``: predicates holding one value at a time."""

    half_life_days: float = 30.0
    count_scale: float = 3.0
    stale_below: float = 0.25
    functional: frozenset[str] = DEFAULT_FUNCTIONAL
    update_discount: float = 0.5

    def __post_init__(self) -> None:
        if not self.half_life_days > 0 or not self.count_scale > 0:
            raise ValueError("half_life_days and count_scale must be positive")
        if not 0.0 <= self.stale_below < 1.0:
            raise ValueError("stale_below must be in [0, 1)")
        if not 0.0 < self.update_discount <= 1.0:
            raise ValueError("update_discount must be in (0, 1]")


Claim = tuple[str, bool]  # (object slug, negated)


def stance_of(fact: Fact, claim: Claim, functional: bool) -> Stance:
    """Stance of ``fact`` toward ``claim`` under the same canonical key."""
    obj, neg = claim
    if fact.object_key == obj:
        return Stance.SUPPORT if fact.negated == neg else Stance.CONTRADICT
    if functional and not fact.negated and not neg:
        return Stance.CONTRADICT
    return Stance.CONTEXT


def superseded_metadata(
    old: Entry, by: str, at_ms: int, valid_to_ms: int | None = None
) -> dict[str, Any]:
    """Metadata for the replaced entry: its own, with status superseded, a link to the
    entry replacing it and, when the claim changed, the end of its valid time
    (``valid_to_ms``: the successor's ``valid_from_ms``). Its claim and evidence are left
    as they were."""
    out = dict(old.metadata)
    out.update(status=BeliefStatus.SUPERSEDED.value, superseded_by=by, superseded_at=at_ms)
    if valid_to_ms is not None:
        out["valid_to_ms"] = valid_to_ms
    return out


def superseded_value(old: Entry, by: str, valid_to_ms: int | None = None) -> Any:
    """The replaced entry's value with the same status (None: a value holding no status,
    left unchanged)."""
    if not isinstance(old.value, dict) or "status" not in old.value:
        return None
    out = dict(old.value)
    out.update(status=BeliefStatus.SUPERSEDED.value, superseded_by=by)
    if valid_to_ms is not None:
        out["valid_to_ms"] = valid_to_ms
    return out


@dataclass(frozen=True, slots=True)
class _Prior:
    claim: Claim
    weight: float
    count: int
    agents: tuple[str, ...]
    last_ms: int
    weighted_at: int


def _prior(entry: Entry) -> _Prior | None:
    v = entry.value if isinstance(entry.value, dict) else {}
    obj = v.get("object")
    if not isinstance(obj, str):
        return None
    m = entry.metadata
    last = int(m.get("last_supported_ms", entry.created_at))
    agents = m.get("agents", [])
    return _Prior(
        claim=(slug(obj), bool(v.get("negated", False))),
        weight=float(m.get("support_weight", 1.0)),
        count=int(m.get("source_count", 1)),
        agents=tuple(a for a in agents if isinstance(a, str)),
        last_ms=last,
        weighted_at=int(m.get("weighted_at_ms", last)),
    )


class FactOut(BaseModel):
    entry: int = Field(description="Index [i] of the entry stating the fact.")
    subject: str
    predicate: str = Field(description="Short verb phrase, e.g. 'lives in', 'prefers'.")
    object: str
    negated: bool = False
    kind: Literal[
        "operator_preference", "project_state", "world_fact", "self_model",
        "relationship_fact", "tooling_state",
    ] | None = Field(default=None, description="What kind of belief, when clear.")


class FactsOut(BaseModel):
    """LLM output of ``semantic``."""

    facts: list[FactOut]


_SYSTEM = (
    "Extract durable facts (subject, predicate, object) that the entries state about "
    "people, projects, tools or the world. Only facts stated in the entries; mark a "
    "denied fact negated. Use short predicates such as 'is', 'has', 'uses', 'prefers', "
    "'lives in'. Give the index of the entry stating each fact."
)


def _weighed(facts: list[Fact], now_ms: int, half_life: float) -> list[Fact]:
    """``facts`` each with its weight ``0.5 ** (age / half_life)``."""
    return [
        Fact(
            f.subject,
            f.predicate,
            f.object,
            f.negated,
            f.source,
            f.at,
            f.agent,
            0.5 ** (max(0, now_ms - f.at) / half_life),
            f.kind,
        )
        for f in facts
    ]


def _aged_prior(existing: Entry | None, now_ms: int, half_life: float) -> _Prior | None:
    """The existing belief's claim and evidence, its weight aged to ``now_ms``."""
    prior = _prior(existing) if existing is not None else None
    if prior is None:
        return None
    # The stored weight was computed at weighted_at_ms; age it from there only.
    age = max(0, now_ms - prior.weighted_at)
    return _Prior(
        prior.claim,
        prior.weight * 0.5 ** (age / half_life),
        prior.count,
        prior.agents,
        prior.last_ms,
        now_ms,
    )


def _contrary_times(fs: list[Fact], c: Claim, prior: _Prior | None, functional: bool) -> list[int]:
    """When something contrary to ``c`` was stated: its contradicting facts, and the prior's
    newest support when the prior holds another claim."""
    out = [f.at for f in fs if stance_of(f, c, functional) is Stance.CONTRADICT]
    if prior is not None and prior.claim != c:
        out.append(prior.last_ms)
    return out


def _discounted(weight: float, at: int, contrary: list[int], discount: float) -> float:
    """``weight`` of evidence stated at ``at``: times ``discount`` once something contrary
    was stated after it (a later statement updates an earlier one)."""
    return weight * discount if any(t > at for t in contrary) else weight


def _support(
    fs: list[Fact], c: Claim, prior: _Prior | None, functional: bool, discount: float = 1.0
) -> tuple[float, int]:
    """Supporting weight of ``c`` (the prior's included when it is ``c``), each piece
    discounted when a contrary statement came after it, and its newest support: the claim
    drafted is the one maximal in this order."""
    contrary = _contrary_times(fs, c, prior, functional) if discount < 1.0 else []
    sup = [f for f in fs if stance_of(f, c, functional) is Stance.SUPPORT]
    w = sum(_discounted(f.weight, f.at, contrary, discount) for f in sup)
    last = max((f.at for f in sup), default=-1)
    if prior is not None and prior.claim == c:
        w += _discounted(prior.weight, prior.last_ms, contrary, discount)
        last = max(last, prior.last_ms)
    return round(w, 9), last


def _winning_claim(
    fs: list[Fact], prior: _Prior | None, functional: bool, discount: float = 1.0
) -> Claim:
    """The claim with the most (update-discounted) supporting weight (the prior's counted
    for its own claim), a tie going to the most recent support, then to the first claim in
    sorted order."""
    candidates = {(f.object_key, f.negated) for f in fs}
    if prior is not None:
        candidates.add(prior.claim)
    return max(sorted(candidates), key=lambda c: _support(fs, c, prior, functional, discount))


def _standing(
    fs: list[Fact], claim: Claim, prior: _Prior | None, functional: bool, discount: float
) -> tuple[float, float]:
    """The claim's update-discounted support and the discounted weight against it (its
    contradicting facts, and the prior's when it holds another claim), each discounted when
    the other side spoke after it: what ``invalidated`` compares."""
    support, _ = _support(fs, claim, prior, functional, discount)
    pro = [f.at for f in fs if stance_of(f, claim, functional) is Stance.SUPPORT]
    if prior is not None and prior.claim == claim:
        pro.append(prior.last_ms)
    against = sum(
        _discounted(f.weight, f.at, pro, discount)
        for f in fs
        if stance_of(f, claim, functional) is Stance.CONTRADICT
    )
    if prior is not None and prior.claim != claim:
        against += _discounted(prior.weight, prior.last_ms, pro, discount)
    return support, round(against, 9)


def _valid_from(
    fs: list[Fact], claim: Claim, prior: _Prior | None, existing: Entry | None, functional: bool
) -> int:
    """When ``claim`` became what is believed (valid time): the prior's own start when it
    already held ``claim``; else the first support after the last contrary statement."""
    if prior is not None and prior.claim == claim and existing is not None:
        return belief_valid_from(existing)
    sup = sorted(f.at for f in fs if stance_of(f, claim, functional) is Stance.SUPPORT)
    if not sup:
        return prior.last_ms if prior is not None else 0
    before = [t for t in _contrary_times(fs, claim, prior, functional) if t < sup[-1]]
    last_con = max(before, default=-1)
    return min(t for t in sup if t > last_con)


def _display_forms(fs: list[Fact], claim: Claim, existing: Entry | None) -> tuple[str, str]:
    """Subject and object as the latest fact asserting ``claim`` writes them, else as the
    existing entry does."""
    asserting = [f for f in fs if (f.object_key, f.negated) == claim]
    if not asserting:
        assert existing is not None
        return existing.value["subject"], existing.value["object"]
    latest = max(asserting, key=lambda f: (f.at, f.source))
    return latest.subject, latest.object


def _fact_evidence(fs: list[Fact], reference: Claim, functional: bool) -> list[dict[str, Any]]:
    """An evidence link per fact, in time order, with its stance toward ``reference``."""
    return [
        {
            "entry": f.source,
            "stance": stance_of(f, reference, functional).value,
            "weight": round(f.weight, 6),
            "agent": f.agent,
            "at": f.at,
            "claim": statement(f.subject, f.predicate, f.object, f.negated),
            # the asserted object, so a team can weigh the link against its own claim
            "object": f.object,
            "negated": f.negated,
        }
        for f in sorted(fs, key=lambda f: (f.at, f.source, f.object_key, f.negated))
    ]


def _context_evidence(fs: list[Fact], es: list[Entry]) -> list[dict[str, Any]]:
    """Context links (weight 0) to the entries not cited by ``fs`` that mention their
    subject."""
    cited = {f.source for f in fs}
    subj_words = set(words(fs[0].subject_key.replace("-", " ")))
    out: list[dict[str, Any]] = []
    for e in es:
        if e.id not in cited and subj_words and subj_words <= set(words(entry_text(e))):
            actors = actors_of(e)
            out.append(
                {
                    "entry": e.id,
                    "stance": Stance.CONTEXT.value,
                    "weight": 0.0,
                    "agent": actors[0] if actors else None,
                    "at": e.created_at,
                    "claim": None,
                }
            )
    return out


def _stances(fs: list[Fact], claim: Claim, functional: bool) -> tuple[list[Fact], list[Fact]]:
    """The facts supporting ``claim`` and those contradicting it."""
    sup = [f for f in fs if stance_of(f, claim, functional) is Stance.SUPPORT]
    con = [f for f in fs if stance_of(f, claim, functional) is Stance.CONTRADICT]
    return sup, con


def _prior_share(prior: _Prior | None, claim: Claim) -> tuple[_Prior | None, float]:
    """The prior when it backs ``claim``, and the weight it holds against ``claim``."""
    if prior is None:
        return None, 0.0
    if prior.claim == claim:
        return prior, 0.0
    return None, prior.weight


def _newest_support(sup: list[Fact], kept: _Prior | None, now_ms: int) -> int:
    """The time of the newest support (a fact's or the backing prior's), else ``now_ms``."""
    return max([f.at for f in sup] + ([kept.last_ms] if kept is not None else []), default=now_ms)


@dataclass(frozen=True, slots=True)
class _Tally:
    """The evidence for the drafted claim: distinct supporting sources, agents, supporting
    and contradicting weight, newest support, whether any fact contradicts it."""

    count: int
    agents: list[str]
    support: float
    contradiction: float
    last_ms: int
    contested: bool


def _tally(
    fs: list[Fact], claim: Claim, prior: _Prior | None, functional: bool, now_ms: int
) -> _Tally:
    """The evidence for ``claim``: ``fs``'s and the prior's (for it or against it)."""
    sup, con = _stances(fs, claim, functional)
    kept, against = _prior_share(prior, claim)
    return _Tally(
        count=len({f.source for f in sup}) + (kept.count if kept is not None else 0),
        agents=sorted(
            {f.agent for f in sup if f.agent} | set(kept.agents if kept is not None else ())
        ),
        support=sum(f.weight for f in sup) + (kept.weight if kept is not None else 0.0),
        contradiction=sum(f.weight for f in con) + against,
        last_ms=_newest_support(sup, kept, now_ms),
        contested=bool(con),
    )


def _confidence(t: _Tally, recency: float, count_scale: float) -> tuple[float, dict[str, Any]]:
    """``confidence`` and its components, as stored (rounded)."""
    count_score = 1.0 - math.exp(-t.count / count_scale)
    diversity = len(t.agents) / (len(t.agents) + 1)
    s_w, c_w = t.support, t.contradiction
    balance = s_w / (s_w + c_w) if s_w + c_w > 0 else 1.0
    confidence = min(
        1.0, max(0.0, balance * (0.5 * count_score + 0.25 * diversity + 0.25 * recency))
    )
    components = {
        "source_count": t.count,
        "count_score": round(count_score, 6),
        "agents": len(t.agents),
        "diversity": round(diversity, 6),
        "support_weight": round(s_w, 6),
        "contradiction_weight": round(c_w, 6),
        "balance": round(balance, 6),
        "recency": round(recency, 6),
    }
    return confidence, components


def _status(stale: bool, standing: float, against: float) -> BeliefStatus:
    """``invalidated`` when the (update-discounted) weight against the claim outweighs its
    support, else ``stale`` when its newest support is old, else ``active``."""
    if against > standing:
        return BeliefStatus.INVALIDATED
    return BeliefStatus.STALE if stale else BeliefStatus.ACTIVE


def _revision(prior: _Prior | None, claim: Claim, contested: bool) -> str:
    if prior is None:
        return "new"
    if prior.claim != claim:
        return "changed"
    return "contested" if contested else "reinforced"


class SemanticTransformer:
    name = "semantic"
    version = "2"  # 2: update-discounted claims, valid time, a version per change

    async def __call__(self, batch: Sequence[Entry], ctx: TransformContext) -> list[Draft]:
        p = parse_params(SemanticParams, ctx.params, self.name)
        es = chronological({e.id: e for e in batch}.values())
        facts, model = extract_facts(es), None
        if ctx.llm is not None and es:
            facts = [f for f in facts if _is_explicit(es, f)] + await self._llm_facts(es, ctx)
            model = ctx.llm.model
        groups: dict[str, list[Fact]] = {}
        by_id = {e.id: e for e in es}
        weighed = weigh_feedback(_weighed(facts, ctx.now_ms, p.half_life_days * _DAY_MS), by_id)
        for f in weighed:
            groups.setdefault(canonical_key(f, p.functional), []).append(f)
        out: list[Draft] = []
        for key, fs in sorted(groups.items()):
            out += self._versions(key, fs, es, by_id, ctx, p, model)
        return out

    def _versions(
        self,
        key: str,
        fs: list[Fact],
        es: list[Entry],
        by_id: Mapping[str, Entry],
        ctx: TransformContext,
        p: SemanticParams,
        model: str | None,
    ) -> list[Draft]:
        """The key's belief, preceded by the belief the batch held before it changed when
        the batch itself changed it (facts stated before the final claim's ``valid_from``
        winning another claim than the stored one, drafted from those facts alone): each
        version with its valid time, so "as of" an instant before the change answers with
        what was believed then."""
        final = self._belief(key, fs, es, by_id, ctx, p, model)
        split = final.metadata["valid_from_ms"]
        early = [f for f in fs if f.at < split]
        late = [f for f in fs if f.at >= split]
        if not early or not late:
            return [final]
        # From the early facts alone, no context links: its sources (hence its id) then
        # differ from the final version's, which cites the late facts too.
        first = self._belief(key, early, [], by_id, ctx, p, model)
        existing = ctx.existing.get(key)
        prior = _prior(existing) if existing is not None else None
        held = _claim_of(first)
        if held == _claim_of(final) or (prior is not None and prior.claim == held):
            return [final]
        # The final version keeps the batch's whole evidence and tally; it now replaces
        # the version the batch held first.
        by = first.entry_id(ctx.edge, ctx.target_scope)
        value = {**final.value, "supersedes": by, "revision": "changed"}
        meta = {**final.metadata, "revision": "changed"}
        return [first, replace(final, value=value, metadata=meta, supersedes=by)]

    async def _llm_facts(self, es: list[Entry], ctx: TransformContext) -> list[Fact]:
        assert ctx.llm is not None
        out = await ctx.llm.complete_json(_SYSTEM, render_batch(es), FactsOut)
        facts = []
        for f in out.facts:
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
                        e.created_at,
                        actors[0] if actors else None,
                        kind=f.kind,
                    )
                )
        return facts

    def _belief(
        self,
        key: str,
        fs: list[Fact],
        es: list[Entry],
        by_id: Mapping[str, Entry],
        ctx: TransformContext,
        p: SemanticParams,
        model: str | None,
    ) -> Draft:
        """The draft of one canonical key's belief from its facts ``fs`` (see the module)."""
        functional = is_functional(fs[0], p.functional)
        half_life = p.half_life_days * _DAY_MS
        existing = ctx.existing.get(key)
        prior = _aged_prior(existing, ctx.now_ms, half_life)
        claim = _winning_claim(fs, prior, functional, p.update_discount)
        subject, obj = _display_forms(fs, claim, existing)
        reference = prior.claim if prior is not None else claim
        evidence = with_snapshots(
            _fact_evidence(fs, reference, functional) + _context_evidence(fs, es), by_id
        )
        tally = _tally(fs, claim, prior, functional, ctx.now_ms)
        recency = 0.5 ** (max(0, ctx.now_ms - tally.last_ms) / half_life)
        confidence, components = _confidence(tally, recency, p.count_scale)
        components["operator_confirmed"] = sum(  # confirmations backing the claim
            1 for f in fs if feedback_kind(by_id.get(f.source)) == "confirm"
            and stance_of(f, claim, functional) is Stance.SUPPORT)
        standing, against = _standing(fs, claim, prior, functional, p.update_discount)
        status = _status(recency < p.stale_below, standing, against)
        revision = _revision(prior, claim, tally.contested)
        valid_from = _valid_from(fs, claim, prior, existing, functional)
        supersedes = existing.id if existing is not None else None
        pred, neg = fs[0].predicate, claim[1]
        kind, subject_type = classify(fs[-1])
        kind = next((f.kind for f in reversed(fs) if f.kind), kind)  # the LLM's, if named
        cadence = CADENCE_DAYS[kind] * _DAY_MS
        fresh = round(0.5 ** (max(0, ctx.now_ms - tally.last_ms) / cadence), 6)
        lifecycle = {
            "belief_kind": kind,
            "subject_type": subject_type,
            "freshness": fresh,
            "revalidation_due_ms": ctx.now_ms + int(cadence),
        }
        value = {
            "subject": subject,
            "predicate": pred,
            "object": obj,
            "negated": neg,
            "statement": statement(subject, pred, obj, neg),
            "canonical_key": key,
            "status": status.value,
            "confidence": round(confidence, 6),
            "confidence_components": components,
            "evidence": evidence,
            "supersedes": supersedes,
            "revision": revision,
            "valid_from_ms": valid_from,
            **lifecycle,
        }
        meta = {
            "kind": "fact",
            "canonical_key": key,
            "status": status.value,
            "confidence": round(confidence, 6),
            "support_weight": components["support_weight"],
            "contradiction_weight": components["contradiction_weight"],
            "source_count": tally.count,
            "agents": tally.agents,
            "last_supported_ms": tally.last_ms,
            "weighted_at_ms": ctx.now_ms,
            "revision": revision,
            "valid_from_ms": valid_from,
            "standing_weight": round(standing, 6),
            "against_weight": round(against, 6),
            **lifecycle,
        }
        sources = [ev["entry"] for ev in evidence]
        return Draft(
            value=value,
            provenance=ctx.provenance(self, sources, model),
            tags=frozenset(
                {"fact", f"predicate:{pred}"[:128], f"subject:{fs[0].subject_key}"[:128]}
            ),
            metadata=meta,
            importance=max(by_id[s].importance for s in sources),
            key=key,
            supersedes=supersedes,
        )


def _claim_of(d: Draft) -> Claim:
    return slug(str(d.value["object"])), bool(d.value["negated"])


def draft_entry(d: Draft, ctx: TransformContext) -> Entry:
    """The entry ``d`` becomes once written to ``ctx.target_scope`` (version 1), as the
    next version of its key sees it before it is stored."""
    return Entry(
        id=d.entry_id(ctx.edge, ctx.target_scope),
        scope=ctx.target_scope,
        value=d.value,
        tags=d.tags,
        metadata=d.full_metadata(),
        key=d.key,
        importance=d.importance,
        created_at=ctx.now_ms,
        updated_at=ctx.now_ms,
        source=d.sources,
    )


def _is_explicit(es: list[Entry], f: Fact) -> bool:
    # Explicit triples are kept alongside LLM facts; text-pattern facts are replaced.
    e = next(x for x in es if x.id == f.source)
    src = e.value if isinstance(e.value, dict) else {}
    return all(k in e.metadata for k in ("subject", "predicate", "object")) or all(
        k in src for k in ("subject", "predicate", "object")
    )


semantic = register_transformer(SemanticTransformer())
