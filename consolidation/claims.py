"""Claims: how the facts of one canonical key weigh into the claim believed (the maths of
:mod:`.semantic`, whose docstring states the rules): each fact's stance toward a claim, the
claim with the most update-discounted support, its standing against what contradicts it,
when it became what is believed (valid time), the tally of its evidence, its confidence
components, its status and the revision a new version is.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from blackboard import Entry
from retrieval.truth import belief_valid_from

from .facts import Fact
from .text import slug

__all__ = [
    "BeliefStatus",
    "Claim",
    "Prior",
    "Stance",
    "Tally",
    "aged_prior",
    "confidence",
    "first_after_last_contrary",
    "prior_of",
    "revision_of",
    "said_order",
    "stance_of",
    "standing",
    "status_of",
    "tally",
    "valid_from",
    "weighed",
    "winning_claim",
]


class Stance(StrEnum):
    SUPPORT = "support"
    CONTRADICT = "contradict"
    CONTEXT = "context"


class BeliefStatus(StrEnum):
    ACTIVE = "active"
    STALE = "stale"
    SUPERSEDED = "superseded"
    INVALIDATED = "invalidated"


Claim = tuple[str, bool]  # (object slug, negated)


def stance_of(fact: Fact, claim: Claim, functional: bool) -> Stance:
    """Stance of ``fact`` toward ``claim`` under the same canonical key."""
    obj, neg = claim
    if fact.object_key == obj:
        return Stance.SUPPORT if fact.negated == neg else Stance.CONTRADICT
    if functional and not fact.negated and not neg:
        return Stance.CONTRADICT
    return Stance.CONTEXT


@dataclass(frozen=True, slots=True)
class Prior:
    claim: Claim
    weight: float
    count: int
    agents: tuple[str, ...]
    last_ms: int
    weighted_at: int


def prior_of(entry: Entry) -> Prior | None:
    v = entry.value if isinstance(entry.value, dict) else {}
    obj = v.get("object")
    if not isinstance(obj, str):
        return None
    m = entry.metadata
    last = int(m.get("last_supported_ms", entry.created_at))
    agents = m.get("agents", [])
    return Prior(
        claim=(slug(obj), bool(v.get("negated", False))),
        weight=float(m.get("support_weight", 1.0)),
        count=int(m.get("source_count", 1)),
        agents=tuple(a for a in agents if isinstance(a, str)),
        last_ms=last,
        weighted_at=int(m.get("weighted_at_ms", last)),
    )


def weighed(facts: list[Fact], now_ms: int, half_life: float) -> list[Fact]:
    """``facts`` each with its weight ``0.5 ** (age / half_life)``."""
    return [replace(f, weight=0.5 ** (max(0, now_ms - f.at) / half_life)) for f in facts]


def aged_prior(existing: Entry | None, now_ms: int, half_life: float) -> Prior | None:
    """The existing belief's claim and evidence, its weight aged to ``now_ms``."""
    prior = prior_of(existing) if existing is not None else None
    if prior is None:
        return None
    # The stored weight was computed at weighted_at_ms; age it from there only.
    age = max(0, now_ms - prior.weighted_at)
    return Prior(
        prior.claim,
        prior.weight * 0.5 ** (age / half_life),
        prior.count,
        prior.agents,
        prior.last_ms,
        now_ms,
    )


#: When a statement was made: (time in ms, write order, place within its entry) --
#: ``Fact.when``; a prior's newest support is known to the ms only, and comes first in it.
When = tuple[int, str, int]


def said_order(at: int, seq: str, entry: str, pos: int) -> When:
    """The :data:`When` of a statement read from an entry: its time, then the order it
    was written in (``seq``, when the entry is a copy; else the entry's own id), then its
    place in the entry."""
    return (at, seq or entry, pos)


def first_after_last_contrary(sup: Iterable[When], con: Iterable[When]) -> When:
    """When a claim last began to hold: the first of its supporting statements ``sup``
    (at least one) after the last contrary one ``con`` that came before its newest
    support."""
    backed = sorted(sup)
    last_con = max((t for t in con if t < backed[-1]), default=None)
    return min(t for t in backed if last_con is None or t > last_con)


def _prior_when(prior: Prior) -> When:
    return (prior.last_ms, "", 0)


def _contrary_times(fs: list[Fact], c: Claim, prior: Prior | None, functional: bool
                    ) -> list[When]:
    """When something contrary to ``c`` was stated: its contradicting facts, and the prior's
    newest support when the prior holds another claim."""
    out = [f.when for f in fs if stance_of(f, c, functional) is Stance.CONTRADICT]
    if prior is not None and prior.claim != c:
        out.append(_prior_when(prior))
    return out


def _discounted(weight: float, at: When, contrary: list[When], discount: float) -> float:
    """``weight`` of evidence stated at ``at``: times ``discount`` once something contrary
    was stated after it (a later statement updates an earlier one, a later sentence of one
    message too)."""
    return weight * discount if any(t > at for t in contrary) else weight


def _support(
    fs: list[Fact], c: Claim, prior: Prior | None, functional: bool, discount: float = 1.0
) -> tuple[float, int]:
    """Supporting weight of ``c`` (the prior's included when it is ``c``), each piece
    discounted when a contrary statement came after it, and its newest support: the claim
    drafted is the one maximal in this order."""
    contrary = _contrary_times(fs, c, prior, functional) if discount < 1.0 else []
    sup = [f for f in fs if stance_of(f, c, functional) is Stance.SUPPORT]
    w = sum(_discounted(f.weight, f.when, contrary, discount) for f in sup)
    last = max((f.at for f in sup), default=-1)
    if prior is not None and prior.claim == c:
        w += _discounted(prior.weight, _prior_when(prior), contrary, discount)
        last = max(last, prior.last_ms)
    return round(w, 9), last


def winning_claim(
    fs: list[Fact], prior: Prior | None, functional: bool, discount: float = 1.0
) -> Claim:
    """The claim with the most (update-discounted) supporting weight (the prior's counted
    for its own claim), a tie going to the most recent support, then to the first claim in
    sorted order."""
    candidates = {(f.object_key, f.negated) for f in fs}
    if prior is not None:
        candidates.add(prior.claim)
    return max(sorted(candidates), key=lambda c: _support(fs, c, prior, functional, discount))


def standing(
    fs: list[Fact], claim: Claim, prior: Prior | None, functional: bool, discount: float
) -> tuple[float, float]:
    """The claim's update-discounted support and the discounted weight against it (its
    contradicting facts, and the prior's when it holds another claim), each discounted when
    the other side spoke after it: what ``invalidated`` compares."""
    support, _ = _support(fs, claim, prior, functional, discount)
    pro = [f.when for f in fs if stance_of(f, claim, functional) is Stance.SUPPORT]
    if prior is not None and prior.claim == claim:
        pro.append(_prior_when(prior))
    against = sum(
        _discounted(f.weight, f.when, pro, discount)
        for f in fs
        if stance_of(f, claim, functional) is Stance.CONTRADICT
    )
    if prior is not None and prior.claim != claim:
        against += _discounted(prior.weight, _prior_when(prior), pro, discount)
    return support, round(against, 9)


def valid_since(
    fs: list[Fact], claim: Claim, prior: Prior | None, existing: Entry | None, functional: bool
) -> When:
    """When ``claim`` became what is believed: the prior's own start when it already held
    ``claim``; else the first support after the last contrary statement."""
    if prior is not None and prior.claim == claim and existing is not None:
        return (belief_valid_from(existing), "", 0)
    sup = [f.when for f in fs if stance_of(f, claim, functional) is Stance.SUPPORT]
    if not sup:
        return (prior.last_ms if prior is not None else 0, "", 0)
    return first_after_last_contrary(sup, _contrary_times(fs, claim, prior, functional))


def valid_from(
    fs: list[Fact], claim: Claim, prior: Prior | None, existing: Entry | None, functional: bool
) -> int:
    """:func:`valid_since` in valid time (ms)."""
    return valid_since(fs, claim, prior, existing, functional)[0]


def _stances(fs: list[Fact], claim: Claim, functional: bool) -> tuple[list[Fact], list[Fact]]:
    """The facts supporting ``claim`` and those contradicting it."""
    sup = [f for f in fs if stance_of(f, claim, functional) is Stance.SUPPORT]
    con = [f for f in fs if stance_of(f, claim, functional) is Stance.CONTRADICT]
    return sup, con


def _prior_share(prior: Prior | None, claim: Claim) -> tuple[Prior | None, float]:
    """The prior when it backs ``claim``, and the weight it holds against ``claim``."""
    if prior is None:
        return None, 0.0
    if prior.claim == claim:
        return prior, 0.0
    return None, prior.weight


def _newest_support(sup: list[Fact], kept: Prior | None, now_ms: int) -> int:
    """The time of the newest support (a fact's or the backing prior's), else ``now_ms``."""
    return max([f.at for f in sup] + ([kept.last_ms] if kept is not None else []), default=now_ms)


@dataclass(frozen=True, slots=True)
class Tally:
    """The evidence for the drafted claim: distinct supporting sources, agents, supporting
    and contradicting weight, newest support, whether any fact contradicts it."""

    count: int
    agents: list[str]
    support: float
    contradiction: float
    last_ms: int
    contested: bool


def tally(
    fs: list[Fact], claim: Claim, prior: Prior | None, functional: bool, now_ms: int
) -> Tally:
    """The evidence for ``claim``: ``fs``'s and the prior's (for it or against it)."""
    sup, con = _stances(fs, claim, functional)
    kept, against = _prior_share(prior, claim)
    return Tally(
        count=len({f.source for f in sup}) + (kept.count if kept is not None else 0),
        agents=sorted(
            {f.agent for f in sup if f.agent} | set(kept.agents if kept is not None else ())
        ),
        support=sum(f.weight for f in sup) + (kept.weight if kept is not None else 0.0),
        contradiction=sum(f.weight for f in con) + against,
        last_ms=_newest_support(sup, kept, now_ms),
        contested=bool(con),
    )


def confidence(t: Tally, recency: float, count_scale: float) -> tuple[float, dict[str, Any]]:
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


def status_of(stale: bool, standing: float, against: float) -> BeliefStatus:
    """``invalidated`` when the (update-discounted) weight against the claim outweighs its
    support, else ``stale`` when its newest support is old, else ``active``."""
    if against > standing:
        return BeliefStatus.INVALIDATED
    return BeliefStatus.STALE if stale else BeliefStatus.ACTIVE


def revision_of(prior: Prior | None, claim: Claim, contested: bool) -> str:
    if prior is None:
        return "new"
    if prior.claim != claim:
        return "changed"
    return "contested" if contested else "reinforced"
