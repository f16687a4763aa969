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
  Ties go to the most recent evidence.
* Evidence stance is relative to the existing belief when there is one, else to the
  drafted claim. The draft never rewrites the existing entry: it ``supersedes`` it, with
  ``revision`` = ``reinforced`` (same claim), ``contested`` (same claim, some
  contradiction) or ``changed`` (a new claim won); ``new`` when nothing existed.
* Confidence components (relative to the drafted claim): ``source_count`` n and
  ``count_score = 1 - exp(-n / count_scale)``; ``agents`` d and ``diversity = d / (d+1)``;
  ``support_weight`` S and ``contradiction_weight`` C with ``balance = S / (S + C)``;
  ``recency = 0.5 ** (age of newest support / half_life)``. ``confidence = balance *
  (0.5 count_score + 0.25 diversity + 0.25 recency)`` in [0, 1].
* Status is ``stale`` when ``recency < stale_below``, else ``active``; ``superseded`` is
  what the writer marks the replaced entry (:func:`superseded_metadata`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from blackboard import Entry

from .draft import Draft
from .facts import (
    DEFAULT_FUNCTIONAL,
    Fact,
    canonical_key,
    canonical_predicate,
    extract_facts,
    statement,
)
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
    "semantic",
    "stance_of",
    "superseded_metadata",
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


@dataclass(frozen=True, slots=True)
class SemanticParams:
    """``half_life_days``: evidence weight halves every this many days; ``count_scale``:
    k of ``1 - exp(-n/k)``; ``stale_below``: recency under which a belief is stale;
    ``functional``: predicates holding one value at a time."""

    half_life_days: float = 30.0
    count_scale: float = 3.0
    stale_below: float = 0.25
    functional: frozenset[str] = DEFAULT_FUNCTIONAL

    def __post_init__(self) -> None:
        if not self.half_life_days > 0 or not self.count_scale > 0:
            raise ValueError("half_life_days and count_scale must be positive")
        if not 0.0 <= self.stale_below < 1.0:
            raise ValueError("stale_below must be in [0, 1)")


Claim = tuple[str, bool]  # (object slug, negated)


def stance_of(fact: Fact, claim: Claim, functional: bool) -> Stance:
    """Stance of ``fact`` toward ``claim`` under the same canonical key."""
    obj, neg = claim
    if fact.object_key == obj:
        return Stance.SUPPORT if fact.negated == neg else Stance.CONTRADICT
    if functional and not fact.negated and not neg:
        return Stance.CONTRADICT
    return Stance.CONTEXT


def superseded_metadata(old: Entry, by: str, at_ms: int) -> dict[str, Any]:
    """Metadata for the replaced entry: its own, with status superseded and a link to the
    entry replacing it. Its claim and evidence are left as they were."""
    out = dict(old.metadata)
    out.update(status=BeliefStatus.SUPERSEDED.value, superseded_by=by, superseded_at=at_ms)
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


class FactsOut(BaseModel):
    """LLM output of ``semantic``."""

    facts: list[FactOut]


_SYSTEM = (
    "Extract durable facts (subject, predicate, object) that the entries state about "
    "people, projects, tools or the world. Only facts stated in the entries; mark a "
    "denied fact negated. Use short predicates such as 'is', 'has', 'uses', 'prefers', "
    "'lives in'. Give the index of the entry stating each fact."
)


class SemanticTransformer:
    name = "semantic"
    version = "1"

    async def __call__(self, batch: Sequence[Entry], ctx: TransformContext) -> list[Draft]:
        p = parse_params(SemanticParams, ctx.params, self.name)
        es = chronological({e.id: e for e in batch}.values())
        facts, model = extract_facts(es), None
        if ctx.llm is not None and es:
            facts = [f for f in facts if _is_explicit(es, f)] + await self._llm_facts(es, ctx)
            model = ctx.llm.model
        half_life = p.half_life_days * _DAY_MS
        facts = [
            Fact(
                f.subject,
                f.predicate,
                f.object,
                f.negated,
                f.source,
                f.at,
                f.agent,
                0.5 ** (max(0, ctx.now_ms - f.at) / half_life),
            )
            for f in facts
        ]
        groups: dict[str, list[Fact]] = {}
        for f in facts:
            groups.setdefault(canonical_key(f, p.functional), []).append(f)
        by_id = {e.id: e for e in es}
        return [
            self._belief(key, fs, es, by_id, ctx, p, model) for key, fs in sorted(groups.items())
        ]

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
        functional = fs[0].predicate in p.functional
        half_life = p.half_life_days * _DAY_MS
        existing = ctx.existing.get(key)
        prior = None
        if existing is not None and (prior := _prior(existing)) is not None:
            # The stored weight was computed at weighted_at_ms; age it from there only.
            age = max(0, ctx.now_ms - prior.weighted_at)
            prior = _Prior(
                prior.claim,
                prior.weight * 0.5 ** (age / half_life),
                prior.count,
                prior.agents,
                prior.last_ms,
                ctx.now_ms,
            )

        def support(c: Claim) -> tuple[float, int]:
            w = sum(f.weight for f in fs if stance_of(f, c, functional) is Stance.SUPPORT)
            last = max(
                (f.at for f in fs if stance_of(f, c, functional) is Stance.SUPPORT), default=-1
            )
            if prior is not None and prior.claim == c:
                w, last = w + prior.weight, max(last, prior.last_ms)
            return round(w, 9), last

        candidates = {(f.object_key, f.negated) for f in fs}
        if prior is not None:
            candidates.add(prior.claim)
        claim = max(sorted(candidates), key=support)
        # Display forms come from the latest fact asserting the claim (or the old entry).
        asserting = [f for f in fs if (f.object_key, f.negated) == claim]
        latest = max(asserting, key=lambda f: (f.at, f.source)) if asserting else None
        if latest is not None:
            subject, obj = latest.subject, latest.object
        else:
            assert existing is not None
            subject, obj = existing.value["subject"], existing.value["object"]
        reference = prior.claim if prior is not None else claim

        evidence: list[dict[str, Any]] = []
        for f in sorted(fs, key=lambda f: (f.at, f.source, f.object_key, f.negated)):
            evidence.append(
                {
                    "entry": f.source,
                    "stance": stance_of(f, reference, functional).value,
                    "weight": round(f.weight, 6),
                    "agent": f.agent,
                    "at": f.at,
                    "claim": statement(f.subject, f.predicate, f.object, f.negated),
                }
            )
        cited = {f.source for f in fs}
        subj_words = set(words(fs[0].subject_key.replace("-", " ")))
        for e in es:
            if e.id not in cited and subj_words and subj_words <= set(words(entry_text(e))):
                actors = actors_of(e)
                evidence.append(
                    {
                        "entry": e.id,
                        "stance": Stance.CONTEXT.value,
                        "weight": 0.0,
                        "agent": actors[0] if actors else None,
                        "at": e.created_at,
                        "claim": None,
                    }
                )

        sup = [f for f in fs if stance_of(f, claim, functional) is Stance.SUPPORT]
        con = [f for f in fs if stance_of(f, claim, functional) is Stance.CONTRADICT]
        same = prior is not None and prior.claim == claim
        n = len({f.source for f in sup}) + (prior.count if same and prior else 0)
        agents = sorted(
            {f.agent for f in sup if f.agent} | set(prior.agents if same and prior else ())
        )
        s_w = sum(f.weight for f in sup) + (prior.weight if same and prior else 0.0)
        c_w = sum(f.weight for f in con) + (prior.weight if prior and not same else 0.0)
        last_sup = max(
            [f.at for f in sup] + ([prior.last_ms] if same and prior else []), default=ctx.now_ms
        )
        recency = 0.5 ** (max(0, ctx.now_ms - last_sup) / half_life)
        count_score = 1.0 - math.exp(-n / p.count_scale)
        diversity = len(agents) / (len(agents) + 1)
        balance = s_w / (s_w + c_w) if s_w + c_w > 0 else 1.0
        confidence = min(
            1.0, max(0.0, balance * (0.5 * count_score + 0.25 * diversity + 0.25 * recency))
        )
        status = BeliefStatus.STALE if recency < p.stale_below else BeliefStatus.ACTIVE
        if prior is None:
            revision = "new"
        elif not same:
            revision = "changed"
        else:
            revision = "contested" if con else "reinforced"
        components = {
            "source_count": n,
            "count_score": round(count_score, 6),
            "agents": len(agents),
            "diversity": round(diversity, 6),
            "support_weight": round(s_w, 6),
            "contradiction_weight": round(c_w, 6),
            "balance": round(balance, 6),
            "recency": round(recency, 6),
        }
        pred, neg = fs[0].predicate, claim[1]
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
            "supersedes": existing.id if existing is not None else None,
            "revision": revision,
        }
        meta = {
            "kind": "fact",
            "canonical_key": key,
            "status": status.value,
            "confidence": round(confidence, 6),
            "support_weight": round(s_w, 6),
            "contradiction_weight": round(c_w, 6),
            "source_count": n,
            "agents": agents,
            "last_supported_ms": last_sup,
            "weighted_at_ms": ctx.now_ms,
            "revision": revision,
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
            supersedes=existing.id if existing is not None else None,
        )


def _is_explicit(es: list[Entry], f: Fact) -> bool:
    # Explicit triples are kept alongside LLM facts; text-pattern facts are replaced.
    e = next(x for x in es if x.id == f.source)
    src = e.value if isinstance(e.value, dict) else {}
    return all(k in e.metadata for k in ("subject", "predicate", "object")) or all(
        k in src for k in ("subject", "predicate", "object")
    )


semantic = register_transformer(SemanticTransformer())
