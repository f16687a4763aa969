"""``procedural`` (stm -> ltm:procedural): recurring action sequences per task kind.

Entries tagged ``action_type:<name>`` are grouped by task (``task:<id>``; action entries
without a task are ignored), ordered by time, and each task kind's tasks (``task_kind:<k>``,
else ``default``) are mined for contiguous n-grams of action types. A pattern's *support*
is the number of tasks containing it; patterns below ``min_support`` are dropped, and so
is a pattern contained in a longer kept one with the same support (closed patterns). A
task's outcome is the last success/failure signal among all its entries in the batch;
``success_rate = successes / (successes + failures)`` (None when no outcome is known).

A procedure already in the target scope (``ctx.existing[key]``) accumulates: its support
and outcome counts are added, its ``procedure_version`` grows by one, and the draft
supersedes it. A new procedure starts at version 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from blackboard import Entry

from .draft import Draft
from .params import parse_params
from .signals import Outcome, action_type_of, chronological, final_outcome, task_kind_of, task_of
from .text import slug
from .transformer import TransformContext, register_transformer

__all__ = [
    "Pattern",
    "ProceduralParams",
    "ProceduralTransformer",
    "TaskRun",
    "mine_patterns",
    "procedural",
    "procedure_key",
    "task_runs",
]


@dataclass(frozen=True, slots=True)
class ProceduralParams:
    """``min_support``: tasks a pattern must occur in; ``min_length``/``max_length``:
    pattern lengths in actions."""

    min_support: int = 2
    min_length: int = 2
    max_length: int = 6

    def __post_init__(self) -> None:
        if self.min_support < 1:
            raise ValueError("min_support must be >= 1")
        if not 1 <= self.min_length <= self.max_length:
            raise ValueError("need 1 <= min_length <= max_length")


@dataclass(frozen=True, slots=True)
class TaskRun:
    """One task's action types in time order, its outcome and the entries involved."""

    task: str
    kind: str
    actions: tuple[str, ...]
    outcome: Outcome
    entries: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Pattern:
    """A mined sequence: ``support`` tasks (ids in ``tasks``), outcome counts among them."""

    kind: str
    actions: tuple[str, ...]
    tasks: tuple[str, ...]
    successes: int
    failures: int

    @property
    def support(self) -> int:
        return len(self.tasks)


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


def _ngrams(seq: tuple[str, ...], lo: int, hi: int) -> set[tuple[str, ...]]:
    return {seq[i : i + n] for n in range(lo, hi + 1) for i in range(len(seq) - n + 1)}


def _contains(big: tuple[str, ...], small: tuple[str, ...]) -> bool:
    n = len(small)
    return any(big[i : i + n] == small for i in range(len(big) - n + 1))


def mine_patterns(
    runs: Sequence[TaskRun],
    params: ProceduralParams,
    keep: frozenset[tuple[str, str]] = frozenset(),
) -> list[Pattern]:
    """Closed frequent contiguous patterns per kind, sorted by (kind, actions).

    ``keep`` holds ``(kind, "a,b,c")`` patterns to report whatever their support (already
    known procedures that new evidence should update).
    """
    occurrences: dict[tuple[str, tuple[str, ...]], list[TaskRun]] = {}
    for r in runs:
        for g in _ngrams(r.actions, params.min_length, params.max_length):
            occurrences.setdefault((r.kind, g), []).append(r)
    frequent = {
        k: rs
        for k, rs in occurrences.items()
        if len(rs) >= params.min_support or (k[0], ",".join(k[1])) in keep
    }
    out = []
    for (kind, g), rs in sorted(frequent.items()):
        closed = not any(
            k2 == kind and len(g2) > len(g) and len(rs2) == len(rs) and _contains(g2, g)
            for (k2, g2), rs2 in frequent.items()
        )
        if closed or (kind, ",".join(g)) in keep:
            out.append(
                Pattern(
                    kind,
                    g,
                    tuple(sorted(r.task for r in rs)),
                    sum(r.outcome is Outcome.SUCCESS for r in rs),
                    sum(r.outcome is Outcome.FAILURE for r in rs),
                )
            )
    return out


def procedure_key(kind: str, actions: Sequence[str]) -> str:
    """``procedure:<kind slug>:<action>,<action>,...`` (actions verbatim, order kept)."""
    return f"procedure:{slug(kind) or 'default'}:{','.join(actions)}"


class ProcedureNote(BaseModel):
    index: int = Field(description="Index of the procedure in the list.")
    name: str = Field(description="Short imperative name of the procedure.")
    description: str = Field(description="One or two sentences: when and how to use it.")


class ProcedureNotes(BaseModel):
    """LLM output of ``procedural``: names for mined procedures."""

    procedures: list[ProcedureNote]


_SYSTEM = (
    "You name recurring action sequences an AI agent performs. For each numbered sequence "
    "give a short imperative name and a one-sentence description of when to use it. "
    "Do not change the sequences."
)


def known_procedures(existing: Mapping[str, Entry]) -> frozenset[tuple[str, str]]:
    """``(kind, "a,b,c")`` of the procedures among ``existing`` keys (``mine_patterns``'s
    ``keep``)."""
    return frozenset(
        (k.split(":")[1], k.split(":", 2)[2])
        for k in existing
        if k.startswith("procedure:") and k.count(":") >= 2
    )


@dataclass(frozen=True, slots=True)
class _Tally:
    """A procedure's counts: this batch's pattern plus what its existing entry holds."""

    support: int
    successes: int
    failures: int
    procedure_version: int

    @classmethod
    def of(cls, pt: Pattern, old: Mapping[str, Any]) -> _Tally:
        return cls(
            pt.support + int(old.get("support", 0)),
            pt.successes + int(old.get("successes", 0)),
            pt.failures + int(old.get("failures", 0)),
            int(old.get("procedure_version", 0)) + 1,
        )

    @property
    def success_rate(self) -> float | None:
        known = self.successes + self.failures
        return round(self.successes / known, 6) if known else None

    def fields(self) -> dict[str, Any]:
        """The counts as a procedure's value and metadata both hold them."""
        return {
            "support": self.support,
            "successes": self.successes,
            "failures": self.failures,
            "success_rate": self.success_rate,
            "procedure_version": self.procedure_version,
        }


class ProceduralTransformer:
    name = "procedural"
    version = "1"

    async def __call__(self, batch: Sequence[Entry], ctx: TransformContext) -> list[Draft]:
        p = parse_params(ProceduralParams, ctx.params, self.name)
        runs = task_runs(batch)
        patterns = mine_patterns(runs, p, known_procedures(ctx.existing))
        notes, model = await self._notes(patterns, ctx)
        entries_of = {r.task: r.entries for r in runs}
        return [
            self._draft(pt, notes.get(i), [e for t in pt.tasks for e in entries_of[t]], ctx, model)
            for i, pt in enumerate(patterns)
        ]

    async def _notes(
        self, patterns: list[Pattern], ctx: TransformContext
    ) -> tuple[dict[int, ProcedureNote], str | None]:
        """The LLM's names for ``patterns`` by index, and its model (none without an LLM)."""
        if ctx.llm is None or not patterns:
            return {}, None
        listing = "\n".join(
            f"[{i}] task kind {pt.kind}: {' -> '.join(pt.actions)}" for i, pt in enumerate(patterns)
        )
        res = await ctx.llm.complete_json(_SYSTEM, listing, ProcedureNotes)
        notes = {n.index: n for n in res.procedures if 0 <= n.index < len(patterns)}
        return notes, ctx.llm.model

    def _draft(
        self,
        pt: Pattern,
        note: ProcedureNote | None,
        sources: list[str],
        ctx: TransformContext,
        model: str | None,
    ) -> Draft:
        """The draft of one mined procedure, superseding the existing one with its key."""
        key = procedure_key(pt.kind, pt.actions)
        old = ctx.existing.get(key)
        tally = _Tally.of(pt, old.metadata if old is not None else {})
        value = {
            "task_kind": pt.kind,
            "steps": list(pt.actions),
            "name": note.name if note else None,
            "description": note.description if note else None,
            **tally.fields(),
            "tasks": list(pt.tasks),
        }
        meta = {"kind": "procedure", "canonical_key": key, "task_kind": pt.kind, **tally.fields()}
        rate = tally.success_rate
        return Draft(
            value=value,
            provenance=ctx.provenance(self, sources, model),
            tags=frozenset(
                {"procedure", f"task_kind:{pt.kind}"[:128]}
                | {f"action_type:{a}"[:128] for a in pt.actions}
            ),
            metadata=meta,
            importance=min(1.0, 0.5 + 0.5 * (rate or 0.0) * min(1.0, tally.support / 5)),
            key=key,
            supersedes=old.id if old is not None else None,
        )


procedural = register_transformer(ProceduralTransformer())
