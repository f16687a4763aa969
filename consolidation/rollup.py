"""Task rollups: what a batch's steps amount to, said once per task (LLM-free).

An agent's working memory is mostly steps: a plan, then actions with outcomes, each an
entry ("agent1 ran post_ledger for invoice-15: failed."). Copying them into a summary
keeps every word and says nothing new. A rollup says what they amount to, one line per
task, built by code from what the entries are (:mod:`.signals`):

    agent1 handled invoice task agent1-invoice-15: 4 steps (fetch_email, extract_fields,
    validate_totals, post_ledger), failed at post_ledger (TimeoutError: ...).

* a *step* is an entry with an action type (``action_type:<name>``); a *plan* an entry
  tagged ``plan`` with a task; both are folded into their task's line;
* the outcome is the last one reported (:func:`.signals.final_outcome`): ``done``,
  ``failed at <action>`` (with the error the failing step recorded, if any), else
  ``outcome unknown``; a task with only its plan in the batch is ``planned``;
* everything else (facts stated, messages, notes: free text) is left to the extractive
  path, which keeps its sentences.

The lines come in the order of their tasks' first entries. :func:`fit` makes them fit a
token budget: with the step lists, else without, else one line tallying the tasks (how
many of each kind, how many done, failed, unfinished) and the failed tasks' lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from blackboard import Entry

from .signals import (
    Outcome,
    action_type_of,
    actors_of,
    final_outcome,
    outcome_of,
    task_kind_of,
    task_of,
)
from .text import count_tokens

__all__ = ["TaskRollup", "fit", "rollups"]

#: Longest error text a line quotes.
_ERROR_CHARS = 80


@dataclass(slots=True)
class TaskRollup:
    """One task's entries in a batch: its plan, its steps (chronological)."""

    task: str
    kind: str | None = None
    agent: str | None = None
    planned: bool = False
    steps: list[Entry] = field(default_factory=list)

    def line(self, with_steps: bool = True) -> str:
        who = f"{self.agent} " if self.agent else ""
        what = f"{self.kind} task {self.task}" if self.kind else f"task {self.task}"
        if not self.steps:
            return f"{who}planned {what}."
        n = len(self.steps)
        names = ", ".join(str(action_type_of(e)) for e in self.steps)
        listed = f" ({names})" if with_steps else ""
        return f"{who}handled {what}: {n} step{'s' if n != 1 else ''}{listed}, {self.end()}."

    def end(self) -> str:
        """How the task ended in the batch: ``done``, ``failed at <action> (...)``,
        ``outcome unknown``, or ``planned`` (no step yet)."""
        if not self.steps:
            return "planned"
        outcome = final_outcome(self.steps)
        if outcome is Outcome.SUCCESS:
            return "done"
        if outcome is Outcome.FAILURE:
            failed = next(e for e in reversed(self.steps) if outcome_of(e) is Outcome.FAILURE)
            err = _error_of(failed)
            return f"failed at {action_type_of(failed)}" + (f" ({err})" if err else "")
        return "outcome unknown"


def _error_of(e: Entry) -> str:
    for src in (e.metadata, e.value if isinstance(e.value, dict) else {}):
        err = src.get("error")
        if isinstance(err, str) and err.strip():
            text = " ".join(err.split())
            return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 1] + "…"
    return ""


def _is_plan(e: Entry) -> bool:
    return "plan" in e.tags and action_type_of(e) is None


def rollups(entries: Sequence[Entry]) -> tuple[list[TaskRollup], list[Entry]]:
    """The tasks of chronological ``entries`` (their plans and steps folded in), and the
    entries that are neither (for the extractive path), in order."""
    tasks: dict[str, TaskRollup] = {}
    rest: list[Entry] = []
    for e in entries:
        task, step = task_of(e), action_type_of(e) is not None
        if task is None or not (step or _is_plan(e)):
            rest.append(e)
            continue
        r = tasks.get(task)
        if r is None:
            who = actors_of(e)
            r = tasks[task] = TaskRollup(task, task_kind_of(e), who[0] if who else None)
        r.kind = r.kind or task_kind_of(e)
        if step:
            r.steps.append(e)
        else:
            r.planned = True
    return list(tasks.values()), rest


def _tally(tasks: Sequence[TaskRollup]) -> str:
    """One line for many tasks: how many of each kind, and how they ended."""
    agents = sorted({t.agent for t in tasks if t.agent})
    kinds: dict[str, int] = {}
    for t in tasks:
        kinds[t.kind or "other"] = kinds.get(t.kind or "other", 0) + 1
    ends = [t.end() for t in tasks]
    done = sum(e == "done" for e in ends)
    failed = sum(e.startswith("failed") for e in ends)
    rest = len(tasks) - done - failed
    who = f"{', '.join(agents)} " if agents else ""
    mix = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    tail = f", {rest} unfinished or planned" if rest else ""
    return f"{who}handled {len(tasks)} tasks ({mix}): {done} done, {failed} failed{tail}."


def fit(tasks: Sequence[TaskRollup], budget: int) -> list[str]:
    """The tasks' lines within ``budget`` tokens: with their step lists when they all fit,
    else without; else one line tallying them, then the failed tasks' lines (what went
    wrong is what a reader needs), as many as fit."""
    for with_steps in (True, False):
        lines = [t.line(with_steps) for t in tasks]
        if sum(count_tokens(x) for x in lines) <= budget:
            return lines
    out = [_tally(tasks)]
    used = count_tokens(out[0])
    if used > budget:
        return []
    for t in tasks:
        if t.end().startswith("failed"):
            x = t.line(with_steps=False)
            if used + count_tokens(x) > budget:
                break
            out.append(x)
            used += count_tokens(x)
    return out
