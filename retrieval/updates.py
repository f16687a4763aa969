"""A later statement about the same thing ranks first: what a hit is a statement about.

A hit's *slot* names the thing it states: a belief's canonical key, or, for other entries,
the first sentence of their own text when short (at most 300 characters: a summary of
many things states none of them; a message's text, its speaker standing for
I/my/we/our) that reads ``<subject> <verb> <object>`` with a verb whose subject holds one
value at a time: lives in / moved to / relocated to (``lives_in``), works at / works for
(``works_at``), prefers; ``is`` only after an attribute subject (``my address``,
``Ana's car``); ``has``/``have`` only before a count (``3 dogs``: the slot names
``dogs``). Slots are ``fact:<subject slug>:<predicate>`` (a count adds the counted noun), so
a raw statement and the belief made of it share one.

:func:`pull_updates`: before a raw statement among the hits, the newest statement on its
slot in the same scope (kept per scope by :class:`~retrieval.scope_index.ScopeIndex`) when
it is newer and was not found by the question's words. :func:`latest_first`: among ranked
hits sharing a slot, the newest (by event time: a message's ``at``, else ``created_at``)
takes the best of the group's positions, and so on; nothing else moves.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

from blackboard import Entry

from .scoring import ScoredEntry
from .text import event_time_ms
from .truth import belief_key, is_belief

__all__ = ["ADVERBS", "latest_first", "pull_updates", "raw_slot", "slot_of", "subject_words"]

_FUNCTIONAL = {
    "lives in": "lives_in", "live in": "lives_in", "moved to": "lives_in",
    "relocated to": "lives_in", "works at": "works_at", "work at": "works_at",
    "works for": "works_at", "work for": "works_at", "prefers": "prefers", "prefer": "prefers",
}
_VERB = "|".join(sorted(map(re.escape, [*_FUNCTIONAL, "is", "are", "has", "have"]),
                        key=lambda v: -len(v)))
_SENT = re.compile(
    rf"(?:^|[.!?:;,]\s+)(?P<s>[\w'\u2019-]+(?:\s+[\w'\u2019-]+){{0,5}}?)\s+"
    rf"(?P<v>{_VERB})\s+(?P<o>[^.!?]{{1,80}})", re.IGNORECASE)
_MAX_CHARS = 300
_SLOTS: dict[tuple[str, int, str, str | None], str | None] = {}
_SLOTS_MAX = 200_000
_SELF = {"i", "my", "we", "our", "me"}
#: Adverbs that may stand between a subject and its verb (``I now live in``).
ADVERBS = frozenset({"now", "just", "also", "still", "actually", "finally", "recently",
                     "really", "currently"})
_COUNT = re.compile(r"^(?:\d+|two|three|four|five|six|seven|eight|nine|ten)\s+(?P<n>[a-z-]+)")


def _slug(text: str) -> str:
    low = text.casefold().replace("\u2019", "'").replace("'s", "")
    return "-".join(re.findall(r"[a-z0-9]+", low))


def subject_words(words: list[str]) -> list[str]:
    """The subject a verb follows: from its last I/we/my/our on (``These days I``: ``I``),
    without adverbs before the verb (``I actually``: ``I``)."""
    low = [w.casefold().replace("\u2019", "'") for w in words]
    start = max((i for i, w in enumerate(low) if w in _SELF), default=0)
    out = list(words[start:])
    while len(out) > 1 and out[-1].casefold() in ADVERBS:
        out.pop()
    return out


def _subject(words: list[str], speaker: str | None) -> tuple[str, bool]:
    """The subject's slug (I/my/we/our read as the speaker) and whether it names an
    attribute (possessive: ``my address``, ``Ana's car``)."""
    low = [w.casefold().replace("\u2019", "'") for w in subject_words(words)]
    attribute = len(low) > 1 and (low[0] in _SELF or any(w.endswith("'s") for w in low[:-1]))
    if low[0] in _SELF and speaker:
        low = [speaker.casefold(), *low[1:]]
    return _slug(" ".join(low)), attribute


def _own_text(e: Entry) -> tuple[str, str | None]:
    v = e.value
    if isinstance(v, dict) and v.get("kind") == "message":
        sp = v.get("speaker")
        return str(v.get("text", "")), sp if isinstance(sp, str) else None
    if isinstance(v, str):
        return v, None
    if isinstance(v, dict) and isinstance(v.get("text"), str):
        return v["text"], None
    return "", None


def slot_of(e: Entry) -> str | None:
    """The slot ``e`` states (see the module), or None. Memoised per (id, version, text):
    recall asks for ~40 hits a query, and the regex costs ~20 us a text."""
    if is_belief(e):
        return belief_key(e)
    text, speaker = _own_text(e)
    k = (e.id, e.version, text, speaker)
    if k in _SLOTS:
        return _SLOTS[k]
    if len(_SLOTS) >= _SLOTS_MAX:
        _SLOTS.clear()
    got = _SLOTS[k] = _text_slot(text, speaker)
    return got


def _text_slot(text: str, speaker: str | None) -> str | None:
    if len(text) > _MAX_CHARS:  # a summary of many things is no statement about one
        return None
    for m in _SENT.finditer(text):
        subj, attribute = _subject(m["s"].split(), speaker)
        verb = m["v"].casefold()
        if not subj:
            continue
        if verb in _FUNCTIONAL:
            return f"fact:{subj}:{_FUNCTIONAL[verb]}"
        if verb in ("is", "are") and attribute:
            return f"fact:{subj}:is"
        if verb in ("has", "have"):
            c = _COUNT.match(m["o"].strip().casefold())
            if c:
                return f"fact:{subj}:has:{c['n'].rstrip('s')}"
    return None


def raw_slot(e: Entry) -> str | None:
    """The slot of a raw statement (None for beliefs: their versions are chained by key)."""
    return None if is_belief(e) else slot_of(e)


def pull_updates(
    hits: Sequence[ScoredEntry], newest: Callable[[str, str], Entry | None]
) -> list[ScoredEntry]:
    """``hits`` with, before each raw statement, the newest statement on its slot in its
    scope (``newest(scope, slot)``) when that one is newer and not among the hits: a later
    update ranks first even when the question's words found only the earlier statement.
    The pulled entry takes the hit's score components, and names the hit (``newer_than``)."""
    have = {h.entry.id for h in hits}
    out: list[ScoredEntry] = []
    for h in hits:
        slot = raw_slot(h.entry)
        if slot is not None:
            n = newest(h.scope, slot)
            if n is not None and n.id not in have and _when(n) > _when(h.entry):
                have.add(n.id)
                out.append(dataclasses.replace(h, entry=n, newer_than=h.entry.id))
        out.append(h)
    return out


def latest_first(hits: Sequence[ScoredEntry]) -> list[ScoredEntry]:
    """``hits`` in order, except that within each slot the newer statement comes first; a
    hit moved up says whose place it took (``newer_than``)."""
    groups: dict[str, list[int]] = {}
    for i, h in enumerate(hits):
        s = slot_of(h.entry)
        if s is not None:
            groups.setdefault(s, []).append(i)
    out = list(hits)
    for idx in groups.values():
        if len(idx) > 1:
            newest = sorted(idx, key=lambda i: -_when(hits[i].entry))
            for place, i in zip(idx, newest, strict=True):
                h = hits[i]
                if place < i:  # moved up, over the earlier statement found there
                    h = dataclasses.replace(h, newer_than=hits[place].entry.id)
                out[place] = h
    return out


def _when(e: Entry) -> int:
    return e.created_at if is_belief(e) else event_time_ms(e)
