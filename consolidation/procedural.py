"""``procedural`` (stm -> ltm:procedural): one procedure per skill (task kind).

Entries tagged ``action_type:<name>`` are grouped by task (``task:<id>``; action entries
without a task are ignored) and ordered by time: a task's *run* is its action types in
order and its outcome (the last success/failure signal among all its entries). Runs are
grouped by task kind (``task_kind:<k>``, else ``default``): a kind is one skill, and has
one procedure, keyed ``procedure:<kind>``.

The procedure keeps the runs it has seen (task -> steps, outcome; the latest
:data:`MAX_RUNS`), so a task whose steps arrive in two batches is one run, stitched, not two
fragments. Its *variants* are its distinct run sequences, except that a run contained as
a contiguous sub-sequence in a sequence with at least as much support (a fragment, a
shortened run) *folds* into it, pooling its task into that variant's support and success
rate. ``steps`` is the variant with the most support (then the longest, then the first by
name); the others are kept under ``variants``. ``support`` is
the number of tasks, ``success_rate = successes / (successes + failures)`` over them
(None when no outcome is known). Runs shorter than ``min_length`` that fold nowhere are
not evidence of a procedure; sequences keep at most ``max_length`` actions. A procedure is
``learned`` once it has ``min_support`` tasks; before that it is written as a
``candidate`` (tag ``candidate``), which holds the runs the next batch continues. An
existing one (``ctx.existing[key]``) is updated by any run of its kind: its
``procedure_version`` grows by one and the draft supersedes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field

from blackboard import Entry

from .draft import Draft
from .llm.schema import narrowed
from .params import parse_params
from .signals import Outcome, action_type_of, chronological, final_outcome, task_kind_of, task_of
from .text import slug, union_tags
from .transformer import TransformContext, register_transformer

__all__ = [
    "MAX_RUNS",
    "ProceduralParams",
    "ProceduralTransformer",
    "Skill",
    "TaskRun",
    "Variant",
    "procedural",
    "procedure_key",
    "task_runs",
    "variants",
]


@dataclass(frozen=True, slots=True)
class ProceduralParams:
    """``min_support``: tasks a new procedure needs; ``min_length``/``max_length``: the
    lengths of a variant in actions (longer runs keep their first ``max_length``)."""

    min_support: int = 2
    min_length: int = 2
    max_length: int = 12

    def __post_init__(self) -> None:
        if self.min_support < 1:
            raise ValueError("min_support must be >= 1")
        if not 1 <= self.min_length <= self.max_length:
            raise ValueError("need 1 <= min_length <= max_length")


#: Runs a procedure keeps (the latest seen): enough to stitch the tasks in progress and to
#: weigh the variants by recent work, small enough that each version (every batch writes
#: one, the old kept superseded) stays a few KB. Older runs stay counted in ``retired``.
MAX_RUNS = 64


@dataclass(frozen=True, slots=True)
class TaskRun:
    """One task's action types in time order, its outcome and the entries involved."""

    task: str
    kind: str
    actions: tuple[str, ...]
    outcome: Outcome
    entries: tuple[str, ...]


def task_runs(batch: Sequence[Entry]) -> list[TaskRun]:
    """The batch's tasks that have at least one action, sorted by task id."""
    by_task: dict[str, list[Entry]] = {}
    for e in chronological({x.id: x for x in batch}.values()):
        t = task_of(e)
        if t is not None:
            by_task.setdefault(t, []).append(e)
    runs = []
    for t, es in sorted(by_task.items()):
        actions = tuple(a for e in es if (a := action_type_of(e)) is not None)
        if not actions:
            continue
        kind = next((k for e in es if (k := task_kind_of(e)) is not None), "default")
        runs.append(TaskRun(t, kind, actions, final_outcome(es), tuple(e.id for e in es)))
    return runs


def _contains(big: tuple[str, ...], small: tuple[str, ...]) -> bool:
    n = len(small)
    return any(big[i : i + n] == small for i in range(len(big) - n + 1))


@dataclass(frozen=True, slots=True)
class Variant:
    """One way of doing the skill: its steps and the tasks done that way (folded runs
    included), with their outcome counts."""

    steps: tuple[str, ...]
    tasks: tuple[str, ...]
    successes: int
    failures: int

    @property
    def support(self) -> int:
        return len(self.tasks)

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": list(self.steps),
            "support": self.support,
            "successes": self.successes,
            "failures": self.failures,
            "success_rate": _rate(self.successes, self.failures),
        }


def _rate(successes: int, failures: int) -> float | None:
    known = successes + failures
    return round(successes / known, 6) if known else None


def variants(runs: Mapping[str, tuple[tuple[str, ...], Outcome]], params: ProceduralParams
             ) -> list[Variant]:
    """The variants of one skill's ``runs`` (task -> (actions, outcome)), most supported
    first (see the module doc for the folding)."""
    by_seq: dict[tuple[str, ...], list[str]] = {}
    for task, (actions, _) in sorted(runs.items()):
        by_seq.setdefault(actions[: params.max_length], []).append(task)
    # Most supported first, a container before its equally supported parts: whatever
    # folds finds its home already placed. Runs too short to be a variant fold last.
    order = sorted(by_seq, key=lambda s: (len(s) < params.min_length, -len(by_seq[s]),
                                          -len(s), s))
    pooled: dict[tuple[str, ...], list[str]] = {}
    for s in order:
        home = next((m for m in pooled if _contains(m, s)), None)
        if home is not None:
            pooled[home] += by_seq[s]
        elif len(s) >= params.min_length:
            pooled[s] = list(by_seq[s])
    out = []
    for s, tasks in pooled.items():
        outs = [runs[t][1] for t in tasks]
        out.append(Variant(s, tuple(sorted(tasks)), outs.count(Outcome.SUCCESS),
                           outs.count(Outcome.FAILURE)))
    return sorted(out, key=lambda v: (-v.support, -len(v.steps), v.steps))


def procedure_key(kind: str) -> str:
    """``procedure:<kind slug>``: one procedure per skill."""
    return f"procedure:{slug(kind) or 'default'}"


class ProcedureNote(BaseModel):
    index: int = Field(description="Index of the procedure in the list.")
    name: str = Field(
        min_length=1, max_length=80, description="Short imperative name of the procedure."
    )
    description: str = Field(
        min_length=1, max_length=300, description="One or two sentences: when and how to use it."
    )


class ProcedureNotes(BaseModel):
    """LLM output of ``procedural``: names for mined procedures."""

    procedures: list[ProcedureNote]


@lru_cache(maxsize=64)
def procedure_notes(indexes: tuple[int, ...]) -> type[ProcedureNotes]:
    """:class:`ProcedureNotes` for the listed procedures ``indexes``: a note names one of
    them, one note each at most (see :mod:`consolidation.llm.schema`)."""
    note = narrowed(
        ProcedureNote,
        index=(Literal[indexes], Field(description="Index of the procedure in the list.")),
    )
    return narrowed(ProcedureNotes, procedures=(list[note], Field(max_length=len(indexes))))  # type: ignore[valid-type]


_SYSTEM = (
    "You name the procedures an AI agent follows. For each numbered sequence "
    "give a short imperative name and a one-sentence description of when to use it. "
    "Do not change the sequences."
)


def _prior_runs(old: Entry | None) -> dict[str, tuple[tuple[str, ...], Outcome]]:
    """The runs an existing procedure kept, in the order it last saw them (malformed
    ones skipped: they were written by code, but a value is data)."""
    raw = old.value.get("runs") if old is not None and isinstance(old.value, dict) else None
    out: dict[str, tuple[tuple[str, ...], Outcome]] = {}
    for task, r in (raw or {}).items() if isinstance(raw, dict) else ():
        try:
            out[str(task)] = (tuple(str(a) for a in r["steps"]), Outcome(r["outcome"]))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def _prior_retired(old: Entry | None) -> tuple[int, int, int]:
    raw = old.value.get("retired") if old is not None and isinstance(old.value, dict) else None
    if not isinstance(raw, dict):
        return 0, 0, 0
    try:
        return int(raw["support"]), int(raw["successes"]), int(raw["failures"])
    except (KeyError, TypeError, ValueError):
        return 0, 0, 0


@dataclass(frozen=True, slots=True)
class Skill:
    """One task kind's procedure after this batch: its kept runs, variants, the tally of
    runs it no longer keeps, the batch entries that are its new evidence, the entry it
    supersedes."""

    kind: str
    runs: dict[str, tuple[tuple[str, ...], Outcome]]
    retired: tuple[int, int, int]
    variants: list[Variant]
    sources: tuple[str, ...]
    old: Entry | None
    learned: bool

    @classmethod
    def learn(cls, kind: str, new: Sequence[TaskRun], old: Entry | None,
              params: ProceduralParams) -> Skill:
        """``old`` (None for a new skill) updated by the batch's runs ``new`` of ``kind``.
        Not ``learned`` until a variant has ``min_support`` tasks: it is written all the
        same, as a candidate, since it holds the runs a later batch continues."""
        runs = _prior_runs(old)
        sup, ok, bad = _prior_retired(old)
        for r in new:
            prev = runs.pop(r.task, None)  # re-inserted last: the latest seen is kept longest
            steps = (prev[0] if prev else ()) + r.actions  # a task continued from a batch
            keep = prev is not None and r.outcome is Outcome.UNKNOWN
            runs[r.task] = (steps, prev[1] if keep and prev else r.outcome)
        while len(runs) > MAX_RUNS:
            task = next(iter(runs))
            outcome = runs.pop(task)[1]
            sup, ok, bad = (sup + 1, ok + (outcome is Outcome.SUCCESS),
                            bad + (outcome is Outcome.FAILURE))
        vs = variants(runs, params)
        learned = bool(vs) and sum(v.support for v in vs) + sup >= params.min_support
        sources = tuple(e for r in new for e in r.entries)
        return cls(kind, runs, (sup, ok, bad), vs, sources, old, learned)

    @property
    def key(self) -> str:
        return procedure_key(self.kind)

    def tally(self) -> dict[str, Any]:
        """Support and outcomes pooled over every variant (and retired runs), and the
        version: as a procedure's value and metadata both hold them."""
        sup, ok, bad = self.retired
        sup += sum(v.support for v in self.variants)
        ok += sum(v.successes for v in self.variants)
        bad += sum(v.failures for v in self.variants)
        old = self.old.metadata if self.old is not None else {}
        return {
            "support": sup,
            "successes": ok,
            "failures": bad,
            "success_rate": _rate(ok, bad),
            "procedure_version": int(old.get("procedure_version", 0)) + 1,
        }


class ProceduralTransformer:
    name = "procedural"
    version = "2"
    #: An updated step (a dedupe merge into it) is the step already taken, not a new one.
    reads_updates = False

    async def __call__(self, batch: Sequence[Entry], ctx: TransformContext) -> list[Draft]:
        p = parse_params(ProceduralParams, ctx.params, self.name)
        by_kind: dict[str, list[TaskRun]] = {}
        for r in task_runs(batch):
            by_kind.setdefault(r.kind, []).append(r)
        skills = [
            Skill.learn(kind, runs, ctx.existing.get(procedure_key(kind)), p)
            for kind, runs in sorted(by_kind.items())
        ]
        notes, model = await self._notes(skills, ctx)
        return [self._draft(sk, notes.get(i), ctx, model) for i, sk in enumerate(skills)]

    async def _notes(
        self, skills: list[Skill], ctx: TransformContext
    ) -> tuple[dict[int, ProcedureNote], str | None]:
        """The LLM's names for ``skills`` by index, and its model (none without an LLM)."""
        if ctx.llm is None or not any(sk.learned for sk in skills):
            return {}, None
        listed = tuple(i for i, sk in enumerate(skills) if sk.learned)
        listing = "\n".join(
            f"[{i}] task kind {skills[i].kind}: {' -> '.join(skills[i].variants[0].steps)}"
            for i in listed
        )
        res = await ctx.llm.complete_json(_SYSTEM, listing, procedure_notes(listed))
        notes = {n.index: n for n in res.procedures if 0 <= n.index < len(skills)}
        return notes, ctx.llm.model

    def _draft(
        self, sk: Skill, note: ProcedureNote | None, ctx: TransformContext, model: str | None
    ) -> Draft:
        """The draft of one skill's procedure, superseding the existing one with its key."""
        tally = sk.tally()
        status = "learned" if sk.learned else "candidate"
        value = {
            "task_kind": sk.kind,
            "status": status,
            "steps": list(sk.variants[0].steps) if sk.variants else [],
            "name": note.name if note else None,
            "description": note.description if note else None,
            **tally,
            "variants": [v.to_json() for v in sk.variants],
            "tasks": sorted(t for v in sk.variants for t in v.tasks),
            "runs": {t: {"steps": list(s), "outcome": o.value} for t, (s, o) in sk.runs.items()},
            "retired": dict(zip(("support", "successes", "failures"), sk.retired, strict=True)),
        }
        meta = {"kind": "procedure", "canonical_key": sk.key, "task_kind": sk.kind,
                "status": status, "method": "llm" if model else "mined", **tally}
        rate = tally["success_rate"]
        actions = {f"action_type:{a}"[:128] for v in sk.variants for a in v.steps}
        return Draft(
            value=value,
            provenance=ctx.provenance(self, sk.sources, model),
            tags=union_tags([frozenset(actions)], ["procedure", f"task_kind:{sk.kind}"[:128]]
                            + ([] if sk.learned else ["candidate"])),
            metadata=meta,
            importance=min(1.0, 0.5 + 0.5 * (rate or 0.0) * min(1.0, tally["support"] / 5)),
            key=sk.key,
            supersedes=sk.old.id if sk.old is not None else None,
        )


procedural = register_transformer(ProceduralTransformer())
