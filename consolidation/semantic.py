"""``semantic`` (stm -> ltm:semantic): facts grouped by canonical key into beliefs.

For each canonical key touched by the batch (see :mod:`.facts` for extraction and keys)
one draft is written, carrying the believed claim, evidence links with a stance, the
confidence and its components, and a status (the weighing is :mod:`.claims`). Rules:

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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from blackboard import Entry
from retrieval.belief_keys import BeliefKey
from retrieval.truth import CADENCE_DAYS

from . import claims
from .claims import BeliefStatus, Claim, Stance, stance_of
from .draft import Draft
from .evidence import with_snapshots
from .facts import (
    DEFAULT_FUNCTIONAL,
    Fact,
    extract_facts,
    is_functional,
    statement,
)
from .feedback import feedback_kind, weigh_feedback
from .kinds import canonical_key
from .llm_facts import llm_facts
from .params import parse_params
from .signals import actors_of, chronological, occurred_at
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


def _display_forms(fs: list[Fact], claim: Claim, existing: Entry | None) -> tuple[str, str]:
    """Subject and object as the latest fact asserting ``claim`` writes them, else as the
    existing entry does."""
    asserting = [f for f in fs if (f.object_key, f.negated) == claim]
    if not asserting:
        assert existing is not None
        return existing.value["subject"], existing.value["object"]
    latest = max(asserting, key=lambda f: (f.when, f.source))
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
            # its place among its entry's statements (a later sentence, a later statement)
            **({"pos": f.pos} if f.pos else {}),
            # the order it was written in, when the cited entry is a copy (team views)
            **({"seq": f.seq} if f.seq and f.seq != f.source else {}),
            "claim": statement(f.subject, f.predicate, f.object, f.negated),
            # the asserted object, so a team can weigh the link against its own claim
            "object": f.object,
            "negated": f.negated,
        }
        for f in sorted(fs, key=lambda f: (f.when, f.source, f.object_key, f.negated))
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
                    "at": occurred_at(e),
                    "claim": None,
                }
            )
    return out


class SemanticTransformer:
    name = "semantic"
    version = "2"  # 2: update-discounted claims, valid time, a version per change

    async def __call__(self, batch: Sequence[Entry], ctx: TransformContext) -> list[Draft]:
        p = parse_params(SemanticParams, ctx.params, self.name)
        es = chronological({e.id: e for e in batch}.values())
        facts, model = extract_facts(es), None
        if ctx.llm is not None and es:
            facts = [f for f in facts if _is_explicit(es, f)] + await llm_facts(es, ctx.llm)
            model = ctx.llm.model
        groups: dict[str, list[Fact]] = {}
        by_id = {e.id: e for e in es}
        half_life = p.half_life_days * _DAY_MS
        for f in weigh_feedback(claims.weighed(facts, ctx.now_ms, half_life), by_id):
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
        existing = ctx.existing.get(key)
        since = claims.valid_since(
            fs, _claim_of(final), claims.prior_of(existing) if existing is not None else None,
            existing, is_functional(fs[0], p.functional))
        early = [f for f in fs if f.when < since]  # stated before, in write order
        late = [f for f in fs if f.when >= since]
        if not early or not late:
            return [final]
        # From the early facts alone, no context links: its sources (hence its id) then
        # differ from the final version's, which cites the late facts too.
        first = self._belief(key, early, [], by_id, ctx, p, model)
        prior = claims.prior_of(existing) if existing is not None else None
        held = _claim_of(first)
        if held == _claim_of(final) or (prior is not None and prior.claim == held):
            return [final]
        # The final version keeps the batch's whole evidence and tally; it now replaces
        # the version the batch held first.
        by = first.entry_id(ctx.edge, ctx.target_scope)
        value = {**final.value, "supersedes": by, "revision": "changed"}
        meta = {**final.metadata, "revision": "changed"}
        return [first, replace(final, value=value, metadata=meta, supersedes=by)]

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
        prior = claims.aged_prior(existing, ctx.now_ms, half_life)
        claim = claims.winning_claim(fs, prior, functional, p.update_discount)
        subject, obj = _display_forms(fs, claim, existing)
        reference = prior.claim if prior is not None else claim
        evidence = with_snapshots(
            _fact_evidence(fs, reference, functional) + _context_evidence(fs, es), by_id
        )
        tally = claims.tally(fs, claim, prior, functional, ctx.now_ms)
        recency = 0.5 ** (max(0, ctx.now_ms - tally.last_ms) / half_life)
        confidence, components = claims.confidence(tally, recency, p.count_scale)
        components["operator_confirmed"] = sum(  # confirmations backing the claim
            1 for f in fs if feedback_kind(by_id.get(f.source)) == "confirm"
            and stance_of(f, claim, functional) is Stance.SUPPORT)
        standing, against = claims.standing(fs, claim, prior, functional, p.update_discount)
        status = claims.status_of(recency < p.stale_below, standing, against)
        revision = claims.revision_of(prior, claim, tally.contested)
        valid_from = claims.valid_from(fs, claim, prior, existing, functional)
        supersedes = existing.id if existing is not None else None
        pred, neg = fs[0].predicate, claim[1]
        parts = BeliefKey.parse(key)
        assert parts is not None and parts.kind is not None  # made by canonical_key
        subject_type = parts.subject_type
        # The LLM's kind, if named, sets the cadence; the key keeps the code's (a model
        # naming kinds differently between batches would fork the slot's key).
        kind = next((f.kind for f in reversed(fs) if f.kind), parts.kind)
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
            # as summarize's: whether an LLM read the batch (its model is in provenance)
            "method": "llm" if model else "rules",
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
