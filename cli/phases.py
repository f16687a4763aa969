"""A long command's progress: one line per phase, and per counted piece of work.

On a terminal the lines are live (rich's spinner, bar, count and elapsed time, left on
screen when done). Piped or redirected (``| tee``, a CI log), a live display would show
nothing until the end, so each phase prints plain lines instead: when it starts, what it
waits on as that changes (at most every :data:`PLAIN_NOTE_S` seconds), and when it ends,
with its time. ``--json`` prints none of them (stdout is the program's).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

__all__ = ["PLAIN_NOTE_S", "Phases"]

#: A plain (not live) phase says what it waits on at most this often.
PLAIN_NOTE_S = 2.0


@dataclass
class _Plain:
    """What a plain line needs of a running phase."""

    what: str
    started: float = field(default_factory=time.monotonic)
    said_at: float = 0.0
    total: float | None = None
    done: float = 0


class Phases:
    """Progress lines for ``console``: live on a terminal, plain lines otherwise, none
    when ``quiet`` (``--json``)."""

    def __init__(self, console: Console, *, quiet: bool = False) -> None:
        self.console = console
        self.plain = not quiet and not console.is_terminal
        self.progress = Progress(
            SpinnerColumn(finished_text="[green]✓[/]"),
            TextColumn("{task.description}"),
            BarColumn(bar_width=12),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=quiet or self.plain,
        )
        self._plain: dict[TaskID, _Plain] = {}

    def __enter__(self) -> Phases:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    @contextlib.contextmanager
    def phase(self, what: str, total: float | None = 1) -> Iterator[TaskID]:
        """A phase: its line while the block runs, marked done (with its time) after."""
        task = self.add(what, total)
        yield task
        self.finish(task)

    def add(self, what: str, total: float | None = 1) -> TaskID:
        """A line for a piece of work of ``total`` steps (None: unknown)."""
        task = self.progress.add_task(what, total=total)
        if self.plain:
            self._plain[task] = _Plain(what, total=total)
            self._say(f"{what} …")
        return task

    def advance(self, task: TaskID, steps: float = 1) -> None:
        self.progress.advance(task, steps)
        if self.plain:
            p = self._plain[task]
            p.done += steps
            if p.total is not None and p.done >= p.total:
                self.finish(task)

    def update(self, task: TaskID, completed: float) -> None:
        self.progress.update(task, completed=completed)
        if self.plain:
            self._plain[task].done = completed

    def note(self, task: TaskID, what: str) -> None:
        """What the phase waits on now (its description)."""
        self.progress.update(task, description=what)
        if self.plain:
            p = self._plain[task]
            now = time.monotonic()
            if what != p.what and now - p.said_at >= PLAIN_NOTE_S:
                p.said_at = now
                self._say(f"  {what}")
            p.what = what

    def finish(self, task: TaskID) -> None:
        t = self.progress.tasks[task]
        self.progress.update(task, total=t.completed or 1, completed=t.completed or 1)
        p = self._plain.pop(task, None)
        if p is not None:
            count = f", {p.done:.0f}/{p.total:.0f}" if p.total and p.total > 1 else ""
            self._say(f"✓ {p.what} ({time.monotonic() - p.started:.1f} s{count})")

    def ticker(self, task: TaskID) -> Callable[[], None]:
        """A step of ``task`` done, as a callable (for code that knows nothing of lines)."""
        return lambda: self.advance(task)

    def _say(self, line: str) -> None:
        self.console.print(line, highlight=False, markup=False, soft_wrap=True)
        self.console.file.flush()
