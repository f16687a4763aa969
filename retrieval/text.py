"""The text of an entry: as indexed (BM25 and embeddings), or its main text alone (what
consolidation compares, hashes and summarises) -- one :func:`entry_text` for both."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from blackboard import Entry
from blackboard.entry import value_text

__all__ = [
    "LONG_MESSAGE_CHARS", "MAIN_TEXT_KEYS", "TEXT_METADATA", "TOKEN_RE", "UNINDEXED_KEYS",
    "entry_text", "estimate_tokens", "event_time_ms", "flatten_value", "is_said",
    "message_text", "origin_of",
]

#: A token as :func:`estimate_tokens` counts them: a word or a punctuation mark.
TOKEN_RE = re.compile(r"\w+|[^\w\s]")


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` takes in a prompt, estimated from above (the caller's model and its
    tokenizer are not known here): ``max(words and punctuation marks, characters / 4)``,
    at or above what BPE tokenizers of English text give, so text within its estimate is
    within the model's count too."""
    return max(len(TOKEN_RE.findall(text)), math.ceil(len(text) / 4))


#: Metadata fields that join the indexed text, in this order: who said it and when help a
#: query find it ("what did Alice say in May"); ``context`` is text around the entry (the
#: previous turn of a dialogue, a document title) that the entry alone does not repeat.
TEXT_METADATA = ("speaker", "date", "title", "caption", "context")

#: Value fields an entry is not indexed by: a belief's or procedure's ``evidence`` holds
#: frozen copies of the entries it cites, which are indexed as themselves. Indexed again in
#: the belief, every belief matched its evidence's words (one fact, many hits) and ran 3-4
#: times longer through the embedder (a collective belief 676 tokens, 219 without).
UNINDEXED_KEYS = frozenset({"evidence"})

#: A message longer than this (characters of its own text) is its own context: it takes no
#: neighbouring turns into its indexed text, is glued into no other turn's, and neither
#: lends nor borrows score in the neighbour spread (:mod:`retrieval.rerank`). Issue 31: on
#: long user-assistant conversations (``bench/longchat.py``, answers of 600-3,000
#: characters) both techniques cost recall on both halves (a short question glued to a long
#: answer, or lifted by it, outranks the answer), while no LoCoMo turn is this long (the
#: longest is 434 characters): ``bench/ablate.py``. A text this long (a message's own, or
#: a plain entry's main text) also gets no first-pass vector while it waits for its own
#: (:meth:`retrieval.engine.SearchEngine._rough_fits`).
LONG_MESSAGE_CHARS = 600

#: Fields holding an observation's main text, most telling first (``entry_text(main=True)``).
#: Not :data:`blackboard.entry.TEXT_KEYS`, which pick the headline a person reads first (an
#: episode's ``title``, a fact's ``statement``): these are the body fields of the
#: observations agents write, and a value with none of them is compared by its whole
#: canonical JSON. One list for both would change what consolidation hashes and prompts.
MAIN_TEXT_KEYS = ("text", "content", "message", "summary", "observation", "description", "action")


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


def _is_message(value: Any) -> bool:
    # the shape memory.conversation writes (kept here as data: retrieval does not import memory)
    return isinstance(value, Mapping) and value.get("kind") == "message"


def _at(value: Mapping[str, Any]) -> datetime | None:
    at = value.get("at")
    if not isinstance(at, str):
        return None
    try:
        return datetime.fromisoformat(at)
    except ValueError:
        return None


def origin_of(entry: Entry) -> str:
    """The entry a copy was made from (``metadata["origin_id"]``, set by the dataflow edges
    that copy, e.g. working -> stm), else the entry itself."""
    v = (entry.metadata or {}).get("origin_id")
    return v if isinstance(v, str) else entry.id


def is_said(entry: Entry) -> bool:
    """Whether someone said the entry: a message, or an entry with a ``speaker``."""
    return _is_message(entry.value) or isinstance((entry.metadata or {}).get("speaker"), str)


def event_time_ms(entry: Entry) -> int:
    """When the entry's content happened: a message's ``at``, else its ``created_at``."""
    if _is_message(entry.value):
        at = _at(entry.value)
        if at is not None:
            return int(at.timestamp() * 1000)
    return entry.created_at


def message_text(value: Mapping[str, Any], metadata: Mapping[str, Any]) -> str:
    """A message as indexed: ``speaker: text``, its caption, the day it was said (words a
    question uses: "8 May 2023", "Monday") and its conversational context."""
    lines = [f"{value.get('speaker', '')}: {value.get('text', '')}"]
    cap = metadata.get("caption")
    if isinstance(cap, str) and cap:
        lines.append(f"[photo: {cap}]")
    at = _at(value)
    if at is not None:
        lines.append(f"{at.strftime('%A')} {at.day} {at.strftime('%B %Y')}")
    ctx = value.get("context")
    if isinstance(ctx, str) and ctx:
        lines.append(ctx)
    return "\n".join(lines)


def entry_text(entry: Entry, *, main: bool = False) -> str:
    """The text of ``entry``: as indexed, ``[speaker: ]value`` (every string field of the
    value but :data:`UNINDEXED_KEYS`, :func:`flatten_value`) plus the other
    :data:`TEXT_METADATA` fields present, one per line (a conversation message:
    :func:`message_text`).

    With ``main``, only the value's main text: a string as is, the first non-blank field of
    :data:`MAIN_TEXT_KEYS`, else the value's canonical JSON (sorted keys). Two renderings on
    purpose: the index wants every word a query may use (who said it, when, each field),
    while consolidation hashes, compares and summarises entries, where a speaker line or a
    date would make two equal observations differ and repeat in every summary."""
    if main:
        return value_text(entry.value, keys=MAIN_TEXT_KEYS, canonical=True)
    if _is_message(entry.value):
        return message_text(entry.value, entry.metadata or {})
    value = entry.value
    if isinstance(value, Mapping) and UNINDEXED_KEYS.intersection(value):
        value = {k: v for k, v in value.items() if k not in UNINDEXED_KEYS}
    body = flatten_value(value)
    md = entry.metadata or {}
    speaker = md.get("speaker")
    lines = [f"{speaker}: {body}" if isinstance(speaker, str) and speaker else body]
    for name in TEXT_METADATA[1:]:
        v = md.get(name)
        if isinstance(v, str) and v:
            lines.append(v)
    return "\n".join(s for s in lines if s)
