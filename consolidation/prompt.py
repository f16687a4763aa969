"""Rendering a batch for an LLM prompt: numbered, timed, attributed lines."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from blackboard import Entry

from .signals import actors_of, claimed_actors_of
from .text import entry_text, truncate_tokens

__all__ = ["render_batch"]


def render_batch(entries: Sequence[Entry], *, max_tokens_each: int = 200) -> str:
    """One line per entry: ``[i] 2024-01-01T00:00:00Z (a1) [tag, ...] text``.

    ``i`` is the entry's index in ``entries``; schemas refer back to entries by it, so
    the LLM never has to copy ids. Each text is cut to ``max_tokens_each`` tokens.
    """
    lines = []
    for i, e in enumerate(entries):
        at = datetime.fromtimestamp(e.created_at / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        who = ",".join(actors_of(e)) or "-"
        claims = claimed_actors_of(e)
        if claims:  # the entry's own words: shown, never as its author
            who += f"; claims {','.join(claims)}"
        tags = ", ".join(sorted(e.tags))
        text = truncate_tokens(" ".join(entry_text(e).split()), max_tokens_each)
        lines.append(f"[{i}] {at} ({who}) [{tags}] {text}")
    return "\n".join(lines)
