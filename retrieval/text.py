"""The text of an entry as indexed (BM25 and embeddings)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from blackboard.entry import Entry

__all__ = ["TEXT_METADATA", "entry_text", "flatten_value"]

#: Metadata fields that join the indexed text, in this order: who said it and when help a
#: query find it ("what did Alice say in May"); ``context`` is text around the entry (the
#: previous turn of a dialogue, a document title) that the entry alone does not repeat.
TEXT_METADATA = ("speaker", "date", "title", "caption", "context")


def flatten_value(value: Any, _depth: int = 0) -> str:
    """Readable text of a JSON value: strings as is; dict string fields as ``key: value``
    lines (nested dicts and lists flattened the same way); numbers and booleans of a dict
    kept as ``key: value``; other scalars dropped."""
    if _depth > 8:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        parts = []
        for k, v in value.items():
            if isinstance(v, str | Mapping | list | tuple):
                inner = flatten_value(v, _depth + 1)
                if inner:
                    parts.append(f"{k}: {inner}")
            elif isinstance(v, int | float) and not isinstance(v, bool):
                parts.append(f"{k}: {v}")
        return "\n".join(parts)
    if isinstance(value, list | tuple):
        return "\n".join(s for s in (flatten_value(v, _depth + 1) for v in value) if s)
    return ""


def entry_text(entry: Entry) -> str:
    """``[speaker: ]value`` plus the other :data:`TEXT_METADATA` fields present, one per line."""
    body = flatten_value(entry.value)
    md = entry.metadata or {}
    speaker = md.get("speaker")
    lines = [f"{speaker}: {body}" if isinstance(speaker, str) and speaker else body]
    for name in TEXT_METADATA[1:]:
        v = md.get(name)
        if isinstance(v, str) and v:
            lines.append(v)
    return "\n".join(s for s in lines if s)
