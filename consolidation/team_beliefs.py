"""``team_beliefs`` (members' ltm:semantic -> the team's ltm:semantic): agents reconcile.

Each agent drafts its own beliefs from what it saw; on one canonical key they may
disagree (agent1 heard "Springfield" twice before the move, agents 2 and 3 heard
"Shelbyville"). This transformer keeps, in the team's semantic scope, one belief per key
that every member's evidence feeds. It reads the members' belief entries (any status:
a superseded agent belief still cites real observations) and works from the *raw
evidence* their links cite, never from the agent beliefs' verdicts (a belief never cites
another belief as evidence; the agent beliefs are only its provenance).

Rules, per canonical key:

* **Who.** A member's belief lives in its ``agent:<a>:ltm:semantic`` scope, which only
  agent ``a`` and the workers write: its links speak for ``a`` alone (whatever agent they
  name), are no later than the belief, and cite only ``a``'s scopes. One agent can
  forge its own view, never another's; and a view counts once, so it cannot outvote two.
  (The team scope itself is writable by every member, as any team entry is: a member can
  write a forged team belief there, which the next draft takes as its prior.)
* **Views.** Each agent has one current view: the claim (object, negation) of its newest
  fact link (by time, then write order, then place in the entry). An agent that said
  "Springfield" twice and later "Shelbyville" now says Shelbyville, in two messages or in
  one: its own later statement updates its earlier one.
  Views are stored in the team belief's ``metadata["views"]`` with how many of the agent's
  links back that view; a link no newer than the agent's stored view is already counted
  (a replayed or re-delivered agent belief changes nothing).
* **Claim.** The claim held by the most agents' views wins; a tie goes to the most recent
  view, then to the first claim in sorted order. Diversity, not repetition, decides.
* **Confidence** (same shape as :mod:`.semantic`): ``count_score = 1 - exp(-n / 3)`` over
  the supporting mentions n, ``diversity = d / (d + 1)`` over the supporting agents d,
  ``balance = S / (S + C)`` with S and C the supporting and contradicting agents' weights
  (each ``0.5 ** (age of the view / half_life)``), ``recency`` of the newest supporting
  view: ``confidence = balance * (0.5 count_score + 0.25 diversity + 0.25 recency)``.
* **Evidence.** The new links of the batch plus the previous team belief's fact links,
  each restanced toward the drafted claim and carrying its snapshot (:mod:`.evidence`),
  deduplicated by entry; the newest ``max_links`` are kept and every agent's view link
  always is (older ones stay with the superseded versions, as history).
* A draft supersedes the team's previous belief on the key (``revision`` as in
  :mod:`.semantic`); a key with nothing new (every link already counted) drafts nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from blackboard import Entry
from blackboard.entry import scope_owner
from retrieval.belief_keys import BeliefKey
from retrieval.truth import belief_valid_from

from .claims import When, first_after_last_contrary, said_order
from .draft import Draft
from .evidence import evidence_links, is_belief
from .facts import Fact, facts_from_text, statement
from .params import parse_params
from .semantic import Stance, stance_of
from .signals import chronological
from .text import slug
from .transformer import TransformContext, register_transformer

__all__ = ["TeamBeliefParams", "TeamBeliefsTransformer", "belief_groups", "team_beliefs"]

_DAY_MS = 86_400_000

Claim = tuple[str, bool]
#: Fields of an agent belief (metadata and value) that are about that entry and its own
#: valid time, not about the claim: the team's version has its own.
_NOT_COPIED = frozenset({"provenance", "supersedes", "superseded_by", "superseded_at",
                         "evidence_kept", "views", "valid_from_ms", "valid_to_ms"})


@dataclass(frozen=True, slots=True)
class TeamBeliefParams:
    """``half_life_days``: a view's weight halves every this many days; ``max_links``:
    evidence links a team belief keeps (each agent's view link always)."""

    half_life_days: float = 30.0
    max_links: int = 48

    def __post_init__(self) -> None:
        if not self.half_life_days > 0 or self.max_links < 1:
            raise ValueError("half_life_days must be positive and max_links at least 1")


@dataclass(frozen=True, slots=True)
class _Link:
    """A fact link of an agent belief: who asserted what, when, citing which entry."""

    agent: str
    claim: Claim
    at: int
    entry: str
    raw: Mapping[str, Any]
    pos: int = 0  # its place among the statements of its entry (consolidation.facts.Fact)
    seq: str = ""  # the order it was written in, when the entry is a copy (Fact.seq)

    @property
    def order(self) -> When:
        return said_order(self.at, self.seq, self.entry, self.pos)


def _claim_of(ln: Mapping[str, Any]) -> Claim | None:
    """The (object slug, negated) a link asserts: its ``object``, else its claim text."""
    obj = ln.get("object")
    if isinstance(obj, str) and slug(obj):
        return slug(obj), bool(ln.get("negated", False))
    text = ln.get("claim")
    got = facts_from_text(text) if isinstance(text, str) else []
    return (slug(got[0][2]), got[0][3]) if got else None


def _fact_links(belief: Entry, owner: str | None = None
                ) -> tuple[list[_Link], list[Mapping[str, Any]]]:
    """The belief's fact links (with an agent and a claim) and its other links.

    With ``owner`` (a member's belief, from its ``agent:<owner>:...`` scope, which only
    that agent and the workers write) every link speaks for the owner alone, whatever
    agent or author it names, no later than the belief itself, and citing only the owner's
    scopes: an agent can forge its own belief, never another member's view."""
    facts: list[_Link] = []
    other: list[Mapping[str, Any]] = []
    for ln in evidence_links(belief):
        if owner is not None:
            cited = ln.get("scope")
            if isinstance(cited, str) and scope_owner(cited) != owner:
                continue
            at = ln.get("at")
            ln = {**ln, "agent": owner, "author": owner,
                  "at": min(at, belief.created_at) if isinstance(at, int) else at}
        claim, agent, at = _claim_of(ln), ln.get("agent"), ln.get("at")
        if claim is not None and isinstance(agent, str) and isinstance(at, int):
            pos, seq = ln.get("pos", 0), ln.get("seq", "")
            facts.append(_Link(agent, claim, at, ln["entry"], ln,
                               pos if isinstance(pos, int) else 0,
                               seq if isinstance(seq, str) else ""))
        else:
            other.append(ln)
    return facts, other


@dataclass(frozen=True, slots=True)
class _View:
    claim: Claim
    at: int
    entry: str
    count: int
    pos: int = 0
    seq: str = ""

    @property
    def order(self) -> When:
        return said_order(self.at, self.seq, self.entry, self.pos)

    def to_json(self) -> dict[str, Any]:
        return {"object": self.claim[0], "negated": self.claim[1], "at": self.at,
                "entry": self.entry, "count": self.count,
                **({"pos": self.pos} if self.pos else {}),
                **({"seq": self.seq} if self.seq else {})}


def _stored_views(existing: Entry | None) -> dict[str, _View]:
    raw = existing.metadata.get("views") if existing is not None else None
    out: dict[str, _View] = {}
    for agent, v in (raw or {}).items():
        try:
            out[agent] = _View((str(v["object"]), bool(v["negated"])), int(v["at"]),
                               str(v["entry"]), int(v["count"]), int(v.get("pos", 0)),
                               str(v.get("seq", "")))
        except (KeyError, TypeError, ValueError):
            continue  # a damaged view is rebuilt from the links that come
    return out


def _update_views(views: dict[str, _View], links: Iterable[_Link]) -> list[_Link]:
    """Fold ``links`` into ``views`` (each agent's newest claim, with how many of its
    links back it); -> the links not yet counted."""
    fresh = []
    for ln in sorted(links, key=lambda x: x.order):
        cur = views.get(ln.agent)
        if cur is not None and ln.order <= cur.order:
            continue
        fresh.append(ln)
        count = cur.count + 1 if cur is not None and cur.claim == ln.claim else 1
        views[ln.agent] = _View(ln.claim, ln.at, ln.entry, count, ln.pos, ln.seq)
    return fresh


def _winner(views: Mapping[str, _View]) -> Claim:
    by_claim: dict[Claim, list[_View]] = {}
    for v in views.values():
        by_claim.setdefault(v.claim, []).append(v)
    return max(sorted(by_claim), key=lambda c: (len(by_claim[c]),
                                                max(v.at for v in by_claim[c])))


def _confidence(views: Mapping[str, _View], claim: Claim, functional: bool, now_ms: int,
                half_life: float) -> tuple[float, dict[str, Any], list[str], int]:
    """Confidence, its components, the supporting agents and the newest support."""
    sup = {a: v for a, v in views.items() if v.claim == claim}
    con = {a: v for a, v in views.items() if v.claim != claim and _against(v.claim, claim,
                                                                            functional)}

    def weight(vs: Iterable[_View]) -> float:
        return sum(0.5 ** (max(0, now_ms - v.at) / half_life) for v in vs)

    n = sum(v.count for v in sup.values())
    last = max((v.at for v in sup.values()), default=now_ms)
    count_score = 1.0 - math.exp(-n / 3.0)
    diversity = len(sup) / (len(sup) + 1)
    s_w, c_w = weight(sup.values()), weight(con.values())
    balance = s_w / (s_w + c_w) if s_w + c_w > 0 else 1.0
    recency = 0.5 ** (max(0, now_ms - last) / half_life)
    conf = min(1.0, max(0.0, balance * (0.5 * count_score + 0.25 * diversity
                                        + 0.25 * recency)))
    comps = {"source_count": n, "count_score": round(count_score, 6), "agents": len(sup),
             "diversity": round(diversity, 6), "support_weight": round(s_w, 6),
             "contradiction_weight": round(c_w, 6), "balance": round(balance, 6),
             "recency": round(recency, 6), "contradicting_agents": len(con)}
    return conf, comps, sorted(sup), last


def _against(view: Claim, claim: Claim, functional: bool) -> bool:
    probe = _Link("", view, 0, "", {})
    return _stance(probe, claim, functional) is Stance.CONTRADICT


def _stance(ln: _Link, claim: Claim, functional: bool) -> Stance:
    f = Fact("s", "p", ln.claim[0], ln.claim[1], ln.entry, ln.at, ln.agent)
    return stance_of(f, claim, functional)


def _evidence(new: list[_Link], other: list[Mapping[str, Any]], existing: Entry | None,
              views: Mapping[str, _View], claim: Claim, functional: bool,
              max_links: int) -> list[dict[str, Any]]:
    """Fact links (carried over and new, restanced toward ``claim``), newest kept, every
    view's link kept; then the batch's context links."""
    carried = _fact_links(existing)[0] if existing is not None else []
    # one link per statement: an entry stating two towns is two links
    by_entry = {(ln.entry, ln.pos): ln for ln in [*carried, *new]}
    must = {(v.entry, v.pos) for v in views.values()}
    ranked = sorted(by_entry.values(), key=lambda x: x.order, reverse=True)
    keep = [ln for ln in ranked if (ln.entry, ln.pos) in must]
    keep += [ln for ln in ranked if (ln.entry, ln.pos) not in must][
        : max(0, max_links - len(keep))]
    out = [{**ln.raw, "stance": _stance(ln, claim, functional).value}
           for ln in sorted(keep, key=lambda x: x.order)]
    seen = {ln["entry"] for ln in out}
    for ln in other:
        if ln["entry"] not in seen and len(out) < max_links + len(views):
            out.append({**ln, "stance": Stance.CONTEXT.value})
            seen.add(ln["entry"])
    return out


def _claim_of_belief(b: Entry) -> Claim:
    return slug(str(b.value.get("object", ""))), bool(b.value.get("negated"))


def _display(beliefs: list[Entry], claim: Claim,
             evidence: list[dict[str, Any]]) -> tuple[Entry, str]:
    """The agent belief to take the team belief's form from (the newest asserting
    ``claim``, else the newest), and the object as written (a link's when no belief
    asserts it)."""
    asserting = [b for b in beliefs if _claim_of_belief(b) == claim]
    if asserting:
        return asserting[-1], str(asserting[-1].value["object"])
    obj = next((str(ln["object"]) for ln in evidence
                if slug(str(ln.get("object", ""))) == claim[0]), claim[0])
    return beliefs[-1], obj


def _functional(key: str) -> bool:
    parts = BeliefKey.parse(key)  # a key naming no object: one value at a time
    return parts is not None and parts.single_valued


def _valid_from(views: Mapping[str, _View], new: list[_Link], claim: Claim,
                functional: bool, existing: Entry | None) -> int:
    """When ``claim`` became the team's belief (valid time, as :mod:`.semantic` keeps it):
    the previous version's start when it held ``claim`` already; else the first statement
    backing ``claim`` (a view, or a link of the batch) after the last one against it,
    never before the previous version began (a chain runs forward in valid time)."""
    if existing is not None and _claim_of_belief(existing) == claim:
        return belief_valid_from(existing)
    said = [(v.claim, v.order) for v in views.values()] + [(ln.claim, ln.order) for ln in new]
    start = first_after_last_contrary([o for c, o in said if c == claim],
                                      [o for c, o in said if _against(c, claim, functional)])[0]
    return max(start, belief_valid_from(existing)) if existing is not None else start


def _revision(existing: Entry | None, claim: Claim, contradicting: int) -> str:
    if existing is None or not isinstance(existing.value, dict):
        return "new"
    if _claim_of_belief(existing) != claim:
        return "changed"
    return "contested" if contradicting else "reinforced"


def belief_groups(batch: Sequence[Entry]) -> list[tuple[str, list[Entry]]]:
    """The batch's agent beliefs by canonical key (keys sorted, beliefs in time order,
    each entry once)."""
    groups: dict[str, list[Entry]] = {}
    for b in chronological({e.id: e for e in batch}.values()):
        if is_belief(b) and isinstance(b.value.get("predicate"), str):
            key = b.value.get("canonical_key") or b.metadata["canonical_key"]
            groups.setdefault(str(key), []).append(b)
    return sorted(groups.items())


class TeamBeliefsTransformer:
    """Runs in the ``semantic`` role (no worker process of its own)."""

    name = "team_beliefs"
    version = "1"
    #: One edge per member drafts into the team's scope from the same prior: their
    #: firings take turns (workers.target_turn), or one could drop another's view.
    one_target_at_a_time = True

    async def __call__(self, batch: Sequence[Entry], ctx: TransformContext) -> list[Draft]:
        p = parse_params(TeamBeliefParams, ctx.params, self.name)
        out = []
        for key, beliefs in belief_groups(batch):
            d = self._draft(key, beliefs, ctx, p)
            if d is not None:
                out.append(d)
        return out

    def _draft(self, key: str, beliefs: list[Entry], ctx: TransformContext,
               p: TeamBeliefParams) -> Draft | None:
        existing = ctx.existing.get(key)
        facts: list[_Link] = []
        other: list[Mapping[str, Any]] = []
        for b in beliefs:
            owner = scope_owner(b.scope)
            if owner is None:
                continue  # not a member's belief: it speaks for no agent
            f, o = _fact_links(b, owner)
            facts += f
            other += o
        views = _stored_views(existing)
        new = _update_views(views, facts)
        if not new and existing is not None:
            return None  # every link already counted: nothing to reconcile
        if not views:
            return None  # agent beliefs without fact links: nothing to believe
        functional = _functional(key)
        claim = _winner(views)
        half_life = p.half_life_days * _DAY_MS
        conf, comps, agents, last = _confidence(views, claim, functional, ctx.now_ms,
                                                half_life)
        evidence = _evidence(new, other, existing, views, claim, functional, p.max_links)
        since = _valid_from(views, new, claim, functional, existing)
        return self._make(key, beliefs, existing, claim, conf, comps, agents, (since, last),
                          views, evidence, ctx)

    def _make(self, key: str, beliefs: list[Entry], existing: Entry | None, claim: Claim,
              conf: float, comps: dict[str, Any], agents: list[str],
              span: tuple[int, int], views: Mapping[str, _View],
              evidence: list[dict[str, Any]], ctx: TransformContext) -> Draft:
        since, last = span  # valid from; newest support
        # The display form (and any field an agent belief carries: kind, subject type...)
        # from the newest agent belief asserting the claim, else the newest one.
        base, obj = _display(beliefs, claim, evidence)
        revision = _revision(existing, claim, comps["contradicting_agents"])
        pred, subject = str(base.value["predicate"]), str(base.value.get("subject", ""))
        value = {**{k: v for k, v in base.value.items() if k not in _NOT_COPIED},
                 "object": obj, "negated": claim[1],
                 "statement": statement(subject, pred, obj, claim[1]),
                 "canonical_key": key, "status": "active", "confidence": round(conf, 6),
                 "confidence_components": comps, "evidence": evidence,
                 "supersedes": existing.id if existing is not None else None,
                 "revision": revision, "valid_from_ms": since}
        meta = {**{k: v for k, v in base.metadata.items() if k not in _NOT_COPIED},
                "kind": "fact", "canonical_key": key, "status": "active", "valid_from_ms": since,
                "confidence": round(conf, 6), "support_weight": comps["support_weight"],
                "contradiction_weight": comps["contradiction_weight"],
                "source_count": comps["source_count"], "agents": agents,
                "last_supported_ms": last, "weighted_at_ms": ctx.now_ms,
                "revision": revision, "team_belief": True,
                "views": {a: v.to_json() for a, v in sorted(views.items())}}
        return Draft(
            value=value,
            provenance=ctx.provenance(self, [b.id for b in beliefs]),
            tags=frozenset({*(t for t in base.tags if t != "superseded"), "fact",
                            "team_belief"}),
            metadata=meta,
            importance=max(b.importance for b in beliefs),
            key=key,
            supersedes=existing.id if existing is not None else None,
        )


team_beliefs = register_transformer(TeamBeliefsTransformer(), role="semantic")
