"""Facts: subject-predicate-object triples read off entries, and their canonical keys.

The LLM-free extractor is deliberately narrow and predictable. It reads

1. explicit triples: metadata (or an object value) with ``subject``, ``predicate``,
   ``object`` and optionally ``negated`` (bool);
2. otherwise, each sentence of the entry's text that matches *exactly* one of
   ``<subject> <verb> <object>`` with verb in: is/are, has/have, uses/use, prefers/prefer,
   lives in/live in, and their negations (is not, isn't, does not have, doesn't use,
   no longer uses, does not live in, ...). The subject is at most 6 words, the object at
   most 8, questions are skipped, a leading article (a/an/the) is dropped from both, and
   an adverb before the verb (now, just, also, still...) from the subject. In a message,
   ``I``/``we`` stand for its speaker.

3. before 2., the forms of :mod:`.fact_forms`: possessives (``Acme's CEO is Jane Doe``),
   dated events (``Initech was founded in March 1999``, dates made ISO), and more verbs
   (likes, switched to, moved to, is based in, became, costs, employs, ...: see
   :data:`.fact_forms.EXTRA_VERBS`).

It does not resolve other pronouns, split conjunctions or understand tense; a sentence it cannot
read is simply not a fact (it may still be *context* evidence, see :mod:`.semantic`).

Canonical keys are made by code, never by a model: subject and object are slugs
(:func:`text.slug`: lowercase ASCII, punctuation dropped, words joined by ``-``, no
stemming); the predicate is one of the canonical names above (``is``, ``has``, ``uses``,
``prefers``, ``lives_in``) or, for other explicit predicates, its slug with ``_``.
A *functional* predicate (one value at a time; default ``lives_in``, ``prefers``) keys on
its subject and predicate (``fact:<kind>:<subject type>:<subject>:<predicate>``, see
:mod:`retrieval.belief_keys` and :func:`.kinds.canonical_key`) so a different object
contradicts; any other predicate adds ``:<object>`` so only a negation contradicts, except
a count (``has 3 dogs``), which keys on its noun (``...:has:dog``) and holds one value at
a time like a functional predicate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from blackboard import Entry
from retrieval.updates import subject_words

from .fact_forms import EXTRA_VERBS, dated, possessive
from .signals import actors_of, occurred_at, origin_id
from .text import entry_text, slug, split_sentences

__all__ = [
    "DEFAULT_FUNCTIONAL",
    "Fact",
    "canonical_predicate",
    "counted_noun",
    "extract_facts",
    "facts_from_text",
    "is_functional",
    "key_rest",
    "statement",
]

DEFAULT_FUNCTIONAL = frozenset({"lives_in", "prefers"})

# surface form -> (canonical predicate, negated); longest forms are tried first.
_VERBS: dict[str, tuple[str, bool]] = {}
for _canon, _pos, _neg in (
    (
        "is",
        ("is", "are"),
        ("is not", "isn't", "are not", "aren't", "is no longer", "are no longer"),
    ),
    (
        "has",
        ("has", "have"),
        (
            "does not have",
            "doesn't have",
            "do not have",
            "don't have",
            "no longer has",
            "no longer have",
        ),
    ),
    (
        "uses",
        ("uses", "use"),
        (
            "does not use",
            "doesn't use",
            "do not use",
            "don't use",
            "no longer uses",
            "no longer use",
        ),
    ),
    (
        "prefers",
        ("prefers", "prefer"),
        (
            "does not prefer",
            "doesn't prefer",
            "do not prefer",
            "don't prefer",
            "no longer prefers",
            "no longer prefer",
        ),
    ),
    (
        "lives_in",
        ("lives in", "live in"),
        (
            "does not live in",
            "doesn't live in",
            "do not live in",
            "don't live in",
            "no longer lives in",
            "no longer live in",
        ),
    ),
):
    for _f in _pos:
        _VERBS[_f] = (_canon, False)
    for _f in _neg:
        _VERBS[_f] = (_canon, True)

_VERBS.update(EXTRA_VERBS)

_VERB_ALT = "|".join(re.escape(v) for v in sorted(_VERBS, key=lambda v: (-len(v), v)))
# a word, apostrophes (straight or curly) included; amounts too ($40, 12%, 3.5)
_WORD = "[\\w'\u2019$\u20ac\u00a3%-]+(?:\\.\\d+)?"
_PATTERN = re.compile(
    rf"^(?P<s>{_WORD}(?:\s+{_WORD}){{0,5}}?)\s+(?P<v>{_VERB_ALT})\s+"
    rf"(?P<o>{_WORD}(?:[\s,]+{_WORD}){{0,7}})\s*[.!]?$",
    re.IGNORECASE,
)
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_SELF = frozenset({"i", "we"})
_NUMBERS = frozenset({"one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                      "ten"})
_SURFACE = {"is": "is", "has": "has", "uses": "uses", "prefers": "prefers", "lives_in": "lives in",
            "likes": "likes"}
_NEG_SURFACE = {
    "is": "is not",
    "has": "does not have",
    "uses": "does not use",
    "prefers": "does not prefer",
    "lives_in": "does not live in",
    "likes": "does not like",
}


@dataclass(frozen=True, slots=True)
class Fact:
    """One asserted triple. ``source`` is the entry id, ``at`` the time (ms) what it records
    happened (``signals.occurred_at``: a copy's original's, not the copy's), ``agent`` the
    first actor of the entry (None when unknown), ``weight`` its evidence weight, ``pos``
    its place among the facts its entry states (one message can say where Acme was and
    where it is now: the later sentence is the later statement)."""

    subject: str
    predicate: str
    object: str
    negated: bool
    source: str
    at: int
    agent: str | None = None
    weight: float = 1.0
    kind: str | None = None  # a belief kind the LLM named (consolidation.kinds), else None
    pos: int = 0
    #: The id of the entry as first written (``signals.origin_id``: a copy's original; a
    #: ULID, in write order): orders statements written within one millisecond.
    seq: str = ""

    @property
    def when(self) -> tuple[int, str, int]:
        """When it was stated, finer than ``at``: (time, write order, place in its entry)."""
        return (self.at, self.seq, self.pos)

    @property
    def subject_key(self) -> str:
        return slug(self.subject)

    @property
    def object_key(self) -> str:
        return slug(self.object)


def canonical_predicate(predicate: str) -> str:
    """``"Lives in"`` -> ``"lives_in"``; a known surface form maps to its canonical name,
    anything else to its slug joined by ``_``."""
    p = " ".join(predicate.casefold().split())
    if p in _VERBS and not _VERBS[p][1]:
        return _VERBS[p][0]
    return slug(p).replace("-", "_")


def key_rest(fact: Fact, functional: frozenset[str] = DEFAULT_FUNCTIONAL) -> str | None:
    """What a key names after the predicate: nothing for a functional predicate, a count's
    noun (``has 3 dogs``: ``dog``, one count at a time), else the object's slug."""
    if fact.predicate in functional:
        return None
    return counted_noun(fact.object_key) or fact.object_key


def is_functional(fact: Fact, functional: frozenset[str] = DEFAULT_FUNCTIONAL) -> bool:
    """Whether ``fact``'s key holds one value at a time (a different object contradicts):
    a functional predicate, or a count."""
    return fact.predicate in functional or counted_noun(fact.object_key) is not None


def statement(subject: str, predicate: str, obj: str, negated: bool) -> str:
    """A readable sentence for a triple: ``Alice does not live in Paris``."""
    table = _NEG_SURFACE if negated else _SURFACE
    verb = table.get(predicate)
    if verb is None:
        verb = ("not " if negated else "") + predicate.replace("_", " ")
    return f"{subject} {verb} {obj}"


def _clean(part: str) -> str:
    return _ARTICLE.sub("", " ".join(part.strip(" ,.!").split()))


def _subject_of(part: str) -> str:
    """The subject, from its last I/we on and without an adverb before the verb (``These
    days I now live in``: ``I``; :func:`retrieval.updates.subject_words`)."""
    return " ".join(subject_words(_clean(part).split()))


def _speaker_for_self(subject: str, entry: Entry) -> str:
    """A message's ``I``/``we`` read as its speaker (so two speakers' "I live in" are two
    subjects); anything else as written."""
    v = entry.value
    if subject.casefold() in _SELF and isinstance(v, dict) and v.get("kind") == "message":
        sp = v.get("speaker")
        if isinstance(sp, str) and slug(sp):
            return sp
    return subject


def counted_noun(object_key: str) -> str | None:
    """``3-dogs`` -> ``dog``: an object that is a count of something (its value is the
    count, so the key names the noun), else None."""
    parts = object_key.split("-")
    if len(parts) >= 2 and (parts[0].isdigit() or parts[0] in _NUMBERS) and parts[1]:
        return parts[1][:-1] if parts[1].endswith("s") and len(parts[1]) > 3 else parts[1]
    return None


def facts_from_text(text: str) -> list[tuple[str, str, str, bool]]:
    """``(subject, canonical predicate, object, negated)`` for each sentence of ``text``
    matching the documented patterns, in order."""
    out = []
    for sent in split_sentences(text):
        if sent.rstrip().endswith("?"):
            continue
        s = sent.strip().replace("\u2019", "'")
        fact = possessive(s) or dated(s) or _verb_fact(s)
        if fact is not None:
            out.append(fact)
    return out


def _verb_fact(sentence: str) -> tuple[str, str, str, bool] | None:
    m = _PATTERN.match(sentence)
    if m is None:
        return None
    subj, obj = _subject_of(m["s"]), _clean(m["o"])
    if not slug(subj) or not slug(obj):
        return None
    pred, neg = _VERBS[m["v"].casefold()]
    return subj, pred, obj, neg


def _explicit(entry: Entry) -> tuple[str, str, str, bool] | None:
    for src in (entry.metadata, entry.value if isinstance(entry.value, dict) else {}):
        s, p, o = src.get("subject"), src.get("predicate"), src.get("object")
        if all(isinstance(x, str) and x.strip() for x in (s, p, o)):
            assert isinstance(s, str) and isinstance(p, str) and isinstance(o, str)
            return _clean(s), canonical_predicate(p), _clean(o), bool(src.get("negated", False))
    return None


def extract_facts(entries: Iterable[Entry]) -> list[Fact]:
    """Facts of ``entries`` by the rules of the module doc (explicit triple first; text
    patterns only for entries without one)."""
    out = []
    for e in entries:
        actors = actors_of(e)
        agent = actors[0] if actors else None
        explicit = _explicit(e)
        triples = [explicit] if explicit is not None else facts_from_text(entry_text(e))
        for pos, (s, p, o, neg) in enumerate(triples):
            if slug(s) and slug(o) and p:
                subj = s if explicit is not None else _speaker_for_self(s, e)
                out.append(Fact(subj, p, o, neg, e.id, occurred_at(e), agent, pos=pos,
                                seq=origin_id(e)))
    return out
