"""``collective_procedures`` (every agent's ltm:procedural -> ``collective``): the skills
several agents learned, pooled.

Each agent keeps one procedure per task kind (:mod:`.procedural`: variants, support and
outcomes, versioned). The collective keeps one per kind as well, under the same key
(``procedure:<kind>``), holding every agent's latest version as a *view* (metadata
``views``: the agent's entry and procedure version, its status, tally and variants), and
pools the views:

* ``support``, ``successes``, ``failures``: sums over the agents (each agent's tally
  counts its own tasks once, and agents do not share tasks); ``success_rate`` the pooled
  rate;
* ``variants``: pooled by their steps across agents (which agents follow it, support,
  outcomes, rate); ``steps`` is the variant most agents follow, then the most supported;
* ``agents``: the agents whose own procedure is ``learned``; ``quorum`` of them
  (:class:`.collective.CollectiveParams`) and the collective procedure is ``learned``,
  else ``proposed``: kept for its views, never offered as truth (:mod:`.collective`);
* ``evidence``: one link per agent, the id of its procedure version, with its tally.

An agent's view changes only with a newer version of its procedure (``procedure_version``,
then time): a replayed or re-delivered one drafts nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from blackboard import Entry
from blackboard.entry import scope_owner

from .collective import CollectiveParams, collective_form, promotion
from .draft import Draft
from .evidence import TEXT_CHARS
from .params import parse_params
from .procedural import procedure_key
from .signals import chronological
from .text import union_tags
from .transformer import TransformContext, register_transformer

__all__ = ["CollectiveProceduresTransformer", "collective_procedures"]

#: Variants kept per agent's view (its most supported): enough to pool the usual ways of
#: doing a skill, bounded so that a version stays a few KB whatever an agent mined.
VIEW_VARIANTS = 8

Steps = tuple[str, ...]


def _int(x: Any) -> int:
    return int(x) if isinstance(x, int | float) and not isinstance(x, bool) else 0


@dataclass(frozen=True, slots=True)
class _Variant:
    steps: Steps
    support: int
    successes: int
    failures: int

    def to_json(self) -> dict[str, Any]:
        return {"steps": list(self.steps), "support": self.support,
                "successes": self.successes, "failures": self.failures}

    @classmethod
    def parse(cls, raw: Any) -> _Variant | None:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("steps"), list):
            return None
        steps = tuple(str(s) for s in raw["steps"])
        if not steps:
            return None
        return cls(steps, _int(raw.get("support")), _int(raw.get("successes")),
                   _int(raw.get("failures")))


@dataclass(frozen=True, slots=True)
class _View:
    """One agent's procedure for the kind, as its latest version stated it (``scope`` and
    ``text``: where that version lives and what it said, the copy its evidence link keeps,
    as :mod:`.evidence` has every link keep one)."""

    entry: str
    version: int
    at: int
    learned: bool
    support: int
    successes: int
    failures: int
    steps: Steps
    variants: tuple[_Variant, ...]
    scope: str = ""
    text: str = ""

    @property
    def order(self) -> tuple[int, int, str]:
        return self.version, self.at, self.entry

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.entry, "procedure_version": self.version, "at": self.at,
                "learned": self.learned, "support": self.support,
                "successes": self.successes, "failures": self.failures,
                "steps": list(self.steps), "variants": [v.to_json() for v in self.variants],
                "scope": self.scope, "text": self.text}

    @classmethod
    def parse(cls, raw: Mapping[str, Any], entry: str, at: int, version: int,
              learned: bool) -> _View:
        vs = [v for v in (_Variant.parse(x) for x in raw.get("variants") or []) if v]
        return cls(entry, version, at, learned, _int(raw.get("support")),
                   _int(raw.get("successes")), _int(raw.get("failures")),
                   tuple(str(s) for s in raw.get("steps") or []), tuple(vs[:VIEW_VARIANTS]))

    @classmethod
    def of_entry(cls, e: Entry) -> _View | None:
        v = e.value if isinstance(e.value, dict) else {}
        if not isinstance(v.get("task_kind"), str):
            return None
        view = cls.parse(v, e.id, e.created_at, _int(e.metadata.get("procedure_version")),
                         v.get("status") == "learned")
        how = " -> ".join(view.steps) or "no steps yet"
        text = (f"{v['task_kind']}: {how} (support {view.support}, success rate "
                f"{_rate(view.successes, view.failures)}, {v.get('status')})")
        return replace(view, scope=e.scope, text=text[:TEXT_CHARS])

    @classmethod
    def stored(cls, raw: Any) -> _View | None:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("entry"), str):
            return None  # a damaged view is rebuilt from the agent's next version
        view = cls.parse(raw, raw["entry"], _int(raw.get("at")),
                         _int(raw.get("procedure_version")), raw.get("learned") is True)
        return replace(view, scope=str(raw.get("scope", "")), text=str(raw.get("text", "")))


def _stored_views(existing: Entry | None) -> dict[str, _View]:
    raw = existing.metadata.get("views") if existing is not None else None
    out: dict[str, _View] = {}
    for agent, v in (raw.items() if isinstance(raw, Mapping) else ()):
        got = _View.stored(v)
        if got is not None:
            out[str(agent)] = got
    return out


def _rate(successes: int, failures: int) -> float | None:
    known = successes + failures
    return round(successes / known, 6) if known else None


def _pooled_variants(views: Mapping[str, _View]) -> list[dict[str, Any]]:
    """Variants pooled by steps over the agents: most agents first, then support."""
    by: dict[Steps, dict[str, Any]] = {}
    for agent, view in sorted(views.items()):
        for v in view.variants:
            p = by.setdefault(v.steps, {"agents": [], "support": 0, "successes": 0,
                                        "failures": 0})
            p["agents"].append(agent)
            p["support"] += v.support
            p["successes"] += v.successes
            p["failures"] += v.failures
    ranked = sorted(by.items(), key=lambda kv: (-len(kv[1]["agents"]), -kv[1]["support"],
                                                -len(kv[0]), kv[0]))
    return [{"steps": list(s), **p, "success_rate": _rate(p["successes"], p["failures"])}
            for s, p in ranked]


class CollectiveProceduresTransformer:
    """Runs in the ``collective`` role; firings into ``collective`` take turns."""

    name = "collective_procedures"
    version = "1"
    one_target_at_a_time = True
    #: A procedure changes by a new version (a write); an update only marks one superseded.
    reads_updates = False

    async def __call__(self, batch: Sequence[Entry], ctx: TransformContext) -> list[Draft]:
        p = parse_params(CollectiveParams, ctx.params, self.name)
        groups: dict[str, list[tuple[str, Entry, _View]]] = {}
        for e in chronological({x.id: x for x in batch}.values()):
            owner, view = scope_owner(e.scope), _View.of_entry(e)
            if owner is not None and view is not None:
                groups.setdefault(str(e.value["task_kind"]), []).append((owner, e, view))
        out = []
        for kind, got in sorted(groups.items()):
            d = self._draft(kind, got, ctx, p.quorum)
            if d is not None:
                out.append(d)
        return out

    def _draft(self, kind: str, got: list[tuple[str, Entry, _View]], ctx: TransformContext,
               quorum: int) -> Draft | None:
        key = procedure_key(kind)
        existing = ctx.existing.get(key)
        views = _stored_views(existing)
        fresh: list[Entry] = []
        for agent, e, view in sorted(got, key=lambda g: g[2].order):
            cur = views.get(agent)
            if cur is None or view.order > cur.order:
                views[agent] = view
                fresh.append(e)
        if not fresh:
            return None  # every version already counted: a replay, or an older one
        return self._make(kind, key, views, fresh, existing, ctx, quorum)

    def _make(self, kind: str, key: str, views: dict[str, _View], fresh: list[Entry],
              existing: Entry | None, ctx: TransformContext, quorum: int) -> Draft:
        learned = sorted(a for a, v in views.items() if v.learned)
        met = len(learned) >= quorum
        pooled = _pooled_variants(views)
        steps = pooled[0]["steps"] if pooled else []
        tally = _tally(views.values())
        newest = max(v.at for v in views.values())
        revision, since = promotion(existing, met, _revision(existing, steps),
                                    max(newest, _since(existing)), newest)
        rate = tally["success_rate"]
        value = {"task_kind": kind, "steps": steps,
                 "statement": _statement(kind, steps, len(learned), rate), **tally,
                 "agents": learned,
                 "agreeing_agents": sorted(a for a, v in views.items()
                                           if list(v.steps) == steps),
                 "variants": pooled, "evidence": _evidence(views)}
        meta = {"kind": "procedure", "canonical_key": key, "task_kind": kind, **tally,
                "agents": learned, "procedure_version": _version(existing) + 1,
                "method": "pooled", "last_supported_ms": newest,
                "views": {a: v.to_json() for a, v in sorted(views.items())}}
        actions = [f"action_type:{a}"[:128] for a in steps]
        tags = union_tags([frozenset(actions)], ["procedure", f"task_kind:{kind}"[:128]])
        value, meta, tags = collective_form(value, meta, tags, met, quorum, revision,
                                            since, "learned")
        return Draft(
            value=value,
            provenance=ctx.provenance(self, [e.id for e in fresh]),
            tags=tags,
            metadata=meta,
            importance=min(1.0, 0.5 + 0.5 * (rate or 0.0) * min(1.0, len(learned) / 3)),
            key=key,
            supersedes=existing.id if existing is not None else None,
        )


def _tally(views: Iterable[_View]) -> dict[str, Any]:
    vs = list(views)
    ok, bad = sum(v.successes for v in vs), sum(v.failures for v in vs)
    return {"support": sum(v.support for v in vs), "successes": ok, "failures": bad,
            "success_rate": _rate(ok, bad)}


def _evidence(views: Mapping[str, _View]) -> list[dict[str, Any]]:
    """One link per agent: its procedure version's id, with its own tally."""
    return [{"agent": a, "entry": v.entry, "procedure_version": v.version, "at": v.at,
             "learned": v.learned, "support": v.support,
             "success_rate": _rate(v.successes, v.failures), "stance": "support",
             # the copy every evidence link keeps (consolidation.evidence.snapshot)
             **({"scope": v.scope, "author": a, "written_at": v.at, "text": v.text}
                if v.scope and v.text else {})}
            for a, v in sorted(views.items())]


def _revision(existing: Entry | None, steps: list[str]) -> str:
    if existing is None:
        return "new"
    return "changed" if existing.value.get("steps") != steps else "reinforced"


def _since(existing: Entry | None) -> int:
    return _int(existing.metadata.get("valid_from_ms")) if existing is not None else 0


def _version(existing: Entry | None) -> int:
    return _int(existing.metadata.get("procedure_version")) if existing is not None else 0


def _statement(kind: str, steps: list[str], agents: int, rate: float | None) -> str:
    how = " -> ".join(steps) if steps else "no common steps yet"
    ok = f", success rate {rate:.2f}" if rate is not None else ""
    return (f"{kind} task procedure: {how} (learned by {agents} "
            f"agent{'' if agents == 1 else 's'}{ok})")


collective_procedures = register_transformer(CollectiveProceduresTransformer(),
                                             role="collective")
