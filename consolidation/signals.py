"""Structured signals read off entries: task, session, task kind, actors, action, outcome.

Every reader looks at tags first (``task:<id>``), then metadata keys, then (for objects)
the value, so producers may use whichever is convenient. All readers are pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Any

from blackboard import Entry
from blackboard.entry import claimed_agents, scope_owner

__all__ = [
    "Outcome",
    "action_type_of",
    "actors_of",
    "chronological",
    "claimed_actors_of",
    "final_outcome",
    "occurred_at",
    "origin_id",
    "outcome_of",
    "session_of",
    "tag_value",
    "task_kind_of",
    "task_of",
]


class Outcome(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    UNKNOWN = "unknown"


_SUCCESS_WORDS = frozenset({"success", "succeeded", "successful", "ok", "pass", "passed", "done"})
_FAILURE_WORDS = frozenset({"failure", "failed", "fail", "error", "errored", "aborted"})


def occurred_at(entry: Entry) -> int:
    """When what the entry records happened (ms): ``metadata["occurred_at"]`` when a copy
    carries its origin's time (identity edges), else ``created_at``."""
    v = entry.metadata.get("occurred_at")
    return int(v) if isinstance(v, int) and not isinstance(v, bool) else entry.created_at


def origin_id(entry: Entry) -> str:
    """Id of the entry a copy was made from (``metadata["origin_id"]``), else its own id."""
    v = entry.metadata.get("origin_id")
    return v if isinstance(v, str) else entry.id


def chronological(batch: Iterable[Entry]) -> list[Entry]:
    """Entries ordered by ``(occurred_at, origin id)``: a total order, so a shuffled batch
    sorts the same way, and copies keep their originals' order (ULIDs sort by time)."""
    return sorted(batch, key=lambda e: (occurred_at(e), origin_id(e)))


def tag_value(entry: Entry, prefix: str) -> str | None:
    """The value of the ``<prefix>:<value>`` tag (smallest when several), else None."""
    p = prefix + ":"
    found = sorted(t[len(p) :] for t in entry.tags if t.startswith(p) and len(t) > len(p))
    return found[0] if found else None


def _field(entry: Entry, *names: str) -> Any:
    for n in names:
        v = entry.metadata.get(n)
        if v not in (None, ""):
            return v
    if isinstance(entry.value, dict):
        for n in names:
            v = entry.value.get(n)
            if v not in (None, ""):
                return v
    return None


def _signal(entry: Entry, tag: str, *fields: str) -> str | None:
    t = tag_value(entry, tag)
    if t is not None:
        return t
    v = _field(entry, *fields)
    return None if v is None else str(v)


def task_of(entry: Entry) -> str | None:
    """Task id: tag ``task:<id>``, else metadata/value ``task`` or ``task_id``."""
    return _signal(entry, "task", "task", "task_id")


def session_of(entry: Entry) -> str | None:
    """Session id: tag ``session:<id>``, else metadata/value ``session`` or ``session_id``."""
    return _signal(entry, "session", "session", "session_id")


def task_kind_of(entry: Entry) -> str | None:
    """Task kind: tag ``task_kind:<k>``, else metadata/value ``task_kind``."""
    return _signal(entry, "task_kind", "task_kind")


def action_type_of(entry: Entry) -> str | None:
    """Action type: tag ``action_type:<name>``, else metadata ``action_type``."""
    return _signal(entry, "action_type", "action_type")


def actors_of(entry: Entry) -> list[str]:
    """Who wrote an entry, as a list (empty when not established): its ``author``, which
    the write script recorded (the owner of an ``agent:<a>:...`` scope), never a name in
    its value, metadata or tags (those are :func:`claimed_actors_of`)."""
    who = scope_owner(entry.scope) or entry.author
    return [who] if who else []


def claimed_actors_of(entry: Entry) -> list[str]:
    """Writers an entry's own metadata (``agent``/``actor``) or tags (``agent:<a>``) name
    besides its author: claims, kept and shown as such, never counted as authorship."""
    return [a for a in claimed_agents(entry) if a not in actors_of(entry)]


def _word_outcome(word: object) -> Outcome | None:
    if isinstance(word, bool):
        return Outcome.SUCCESS if word else Outcome.FAILURE
    if not isinstance(word, str):
        return None
    w = word.strip().casefold()
    if w in _SUCCESS_WORDS:
        return Outcome.SUCCESS
    if w in _FAILURE_WORDS:
        return Outcome.FAILURE
    return None


def outcome_of(entry: Entry) -> Outcome | None:
    """The outcome an entry reports, or None when it reports none.

    Tags ``success`` / ``failure`` (or ``outcome:<word>``), else an ``outcome`` field in
    metadata or the value (a word such as ``succeeded``/``failed``, or a bool). When an
    entry carries both success and failure tags it is ambiguous and reports UNKNOWN.
    """
    tagged = {o for t in entry.tags if (o := _word_outcome(t)) is not None}
    ov = tag_value(entry, "outcome")
    if ov is not None and (o := _word_outcome(ov)) is not None:
        tagged.add(o)
    if len(tagged) > 1:
        return Outcome.UNKNOWN
    if tagged:
        return tagged.pop()
    return _word_outcome(_field(entry, "outcome"))


def final_outcome(entries: Sequence[Entry]) -> Outcome:
    """Outcome of a chronological run of entries: the last reported outcome wins (a retry
    that succeeds after a failure is a success); UNKNOWN when none reports one."""
    for e in reversed(entries):
        o = outcome_of(e)
        if o is not None:
            return o
    return Outcome.UNKNOWN
