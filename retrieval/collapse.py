"""Each fact once: a ranked list of hits collapsed so that a memory and the entries derived
from it (copies, summaries and episodes that contain it, beliefs stating it, team copies)
come back as one hit, the others listed in its ``also_in``.

Pure functions over :class:`ScoredEntry` lists; the retriever runs :func:`collapse` on the
ranked candidates before the top-k cut (:class:`retrieval.recall.Retriever`), and
``MemoryQuery(collapse=False)`` skips it for a tool that wants every form.

**Same fact.** Two hits state the same fact when

1. one is a copy of the other, or both of one entry (``metadata["origin_id"]``, set by
   the edges that copy: working -> stm);
2. their indexed text is the same, case and spacing aside (a copy whose provenance was
   lost, the same sentence stored twice);
3. one derives from the other (its ``source`` names the other, the other's origin, or an
   entry that derives from them -- followed through ``lookup`` up to :data:`DEPTH` steps:
   a team copy of a summary of a step) *and* one's text contains the other's statement,
   word for word (a summary or episode holding the sentence, a belief restating it).
   Provenance alone is not enough: a belief drawn from a batch of steps, or a summary
   that left a step out, does not state every step it came from.

A copy or derivation claim is metadata its writer chose: it counts only from the dataflow
(no ``author``) or in an agent's own scope (:func:`is_derived`), so a team member cannot
fold another member's memory under an entry of its own.

Rules 1-3 are closed transitively into classes, except through a *span*: a derived
entry that contains the statements of two or more classes (a summary of a batch, an
episode of several steps). A span does not merge the classes it covers -- they are
different facts -- but is listed in ``also_in`` of the first of them (in rank order), so
its sentences are never shown twice and it never stands in for them.

**Which form shows.** A class shows as one hit, in the place of its best-ranked member
(a fresh entry never ranks below its own derived copies), and that hit is:

- the newest *original* member: an entry written as it is, not by the dataflow (no
  ``provenance``, no ``origin_id``) -- the caller's own words, the freshest when it stored
  the same sentence again (whoever wrote it: the same words in a team scope show with
  their own ``author``);
- else (only derived forms matched) a team's belief when one states it (the team's
  current truth, every member's evidence: :mod:`.reconcile`), else the member covering
  the most sources (a belief with several supporting entries, a summary of several steps
  adds to a one-source copy); ties to the best-ranked.

The hit keeps its own scores, so the list is in rank order of each class's best form and
a hit's ``score`` may be below the next one's. ``also_in`` lists every other member (ids
and scopes), best-ranked first, and carries what hits collapsed before had (collapsing
twice, e.g. after fusing rankings, loses nothing).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from blackboard import Entry, EntryRef
from blackboard.entry import scope_owner

from .reconcile import is_team_belief
from .scoring import ScoredEntry
from .text import entry_text, origin_of

__all__ = ["DEPTH", "collapse", "is_derived", "same_text_key", "statement_words"]

#: How many derivation steps a hit's sources are followed through ``lookup`` (a team copy
#: of a summary of a step is two; an episode of copies of steps is two).
DEPTH = 3
#: At most this many ancestors are looked up per hit (a summary of a large batch).
MAX_ANCESTORS = 256

_WORDS = re.compile(r"[^\W_]+")

Lookup = Callable[[str], Entry | None]


def _indexed(e: Entry) -> str:
    """:func:`entry_text` (the indexed text), the common case first: a plain string with
    no metadata is its own text."""
    if type(e.value) is str and not e.metadata:
        return e.value
    return entry_text(e)


def _head(e: Entry) -> str:
    """``e.text`` (the headline), a plain string read as it is."""
    v = e.value
    return v if type(v) is str else e.text


def _claims(e: Entry) -> bool:
    md = e.metadata
    return "provenance" in md or "origin_id" in md


def is_derived(e: Entry) -> bool:
    """Whether the dataflow wrote ``e`` from other entries (a draft's ``provenance``, a
    copy's ``origin_id``), rather than someone storing it as it is.

    The claim is metadata, which a writer chooses, so it counts only where the dataflow is
    the one that could have made it: an entry without an ``author`` (the dataflow writes
    none), or one in an agent's own scope (only that agent and the dataflow write there, so
    a false claim misleads no one else). In a team or collective scope a member's entry
    claiming to be a copy of another's is that member's own entry: it cannot fold another
    member's memory under its own text."""
    return _claims(e) and (e.author is None or scope_owner(e.scope) is not None)


def same_text_key(text: str) -> str:
    """``text`` with case and runs of whitespace made equal (cheap: clean text is only
    case-folded): the key of rule 2."""
    s = text.casefold()
    if "  " in s or "\n" in s or "\t" in s or "\r" in s or s[:1].isspace() or s[-1:].isspace():
        s = " ".join(s.split())
    return s


def statement_words(text: str) -> str:
    """``text`` as its words (letters and digits, case-folded), one space apart and padded
    with one at each end: ``a`` holds ``b`` word for word iff ``b`` is in ``a``."""
    words = _WORDS.findall(text.casefold())
    return f" {' '.join(words)} " if words else ""


class _Hits:
    """What the rules read of each hit, computed once (the word forms only when needed)."""

    def __init__(self, hits: Sequence[ScoredEntry], lookup: Lookup | None) -> None:
        self.hits = hits
        self.lookup = lookup
        self.derived = [is_derived(h.entry) for h in hits]
        self.origin = [origin_of(h.entry) if d else h.entry.id
                       for h, d in zip(hits, self.derived, strict=True)]
        self._said: dict[int, str] = {}
        self._body: dict[int, str] = {}
        self._named: dict[str, list[int]] | None = None

    @property
    def named(self) -> dict[str, list[int]]:
        """Id -> the hits it names: a hit's own id and its origin's (a copy answers for its
        original). Built when a derived hit needs it."""
        if self._named is None:
            self._named = {}
            for i, h in enumerate(self.hits):
                for name in {h.entry.id, self.origin[i]}:
                    self._named.setdefault(name, []).append(i)
        return self._named

    def said(self, i: int) -> str:
        """What hit ``i`` states: its headline (``Entry.text``), as words."""
        if i not in self._said:
            self._said[i] = statement_words(self.hits[i].entry.text)
        return self._said[i]

    def body(self, i: int) -> str:
        """All of hit ``i``'s indexed text (every field of a summary, an episode's steps),
        as words."""
        if i not in self._body:
            self._body[i] = statement_words(_indexed(self.hits[i].entry))
        return self._body[i]

    def ancestors(self, i: int) -> set[str]:
        """Ids hit ``i`` derives from: its sources and their origins, then theirs (through
        ``lookup``), :data:`DEPTH` steps at most."""
        e = self.hits[i].entry  # derived (is_derived): its claims count
        seen: set[str] = set(e.source)
        if self.origin[i] != e.id:
            seen.add(self.origin[i])
        frontier = list(seen)
        for _ in range(DEPTH - 1):
            if self.lookup is None or not frontier or len(seen) >= MAX_ANCESTORS:
                break
            nxt = []
            for x in frontier:
                got = self.lookup(x)
                if got is None or not is_derived(got):
                    continue
                for y in (origin_of(got), *got.source):
                    if y not in seen and len(seen) < MAX_ANCESTORS:
                        seen.add(y)
                        nxt.append(y)
            frontier = nxt
        return seen

    def states(self, i: int, j: int) -> bool:
        """Whether hit ``i``'s text holds hit ``j``'s statement, or ``j``'s holds ``i``'s."""
        si, sj = self.said(i), self.said(j)
        return bool(sj and sj in self.body(i)) or bool(si and si in self.body(j))

    def derives(self, i: int) -> set[int]:
        """The hits derived hit ``i`` comes from and states (rule 3)."""
        out = set()
        for a in self.ancestors(i):
            for j in self.named.get(a, ()):
                if j != i and self.states(i, j):
                    out.add(j)
        return out


class _Classes:
    """Union-find over hit positions; a class's root is its best-ranked member."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        p = self.parent
        while p[i] != i:
            p[i] = p[p[i]]
            i = p[i]
        return i

    def union(self, i: int, j: int) -> None:
        a, b = self.find(i), self.find(j)
        if a != b:
            self.parent[max(a, b)] = min(a, b)

    def join_equal(self, keys: Iterable[Any] | Mapping[int, Any]) -> None:
        """Join the positions with equal, non-empty keys (``keys``: one per position, or
        position -> key)."""
        first: dict[Any, int] = {}
        pairs = keys.items() if isinstance(keys, Mapping) else enumerate(keys)
        for i, k in pairs:
            if k and (j := first.setdefault(k, i)) != i:
                self.union(j, i)


def collapse(hits: Sequence[ScoredEntry], lookup: Lookup | None = None) -> list[ScoredEntry]:
    """``hits`` (best first) with each fact once, as the module docstring says: one hit per
    class in the place of its best-ranked member, the others in its ``also_in``.
    ``lookup`` (entry id -> the entry, or None) lets rule 3 follow sources that are not
    hits themselves."""
    n = len(hits)
    if n < 2:
        return list(hits)
    heads = [same_text_key(_head(h.entry)) for h in hits]
    if len(set(heads)) == n and not any(_claims(h.entry) for h in hits):
        return list(hits)  # the common case: distinct texts, nothing derived
    info = _Hits(hits, lookup)
    cls = _Classes(n)
    cls.join_equal(info.origin)  # rule 1
    _join_same_text(cls, hits, heads)  # rule 2
    derived = [i for i in range(n) if info.derived[i]]
    spans = _join_derived(cls, {i: info.derives(i) for i in derived}) if derived else set()
    return _build(hits, cls, spans)


def _join_same_text(cls: _Classes, hits: Sequence[ScoredEntry], heads: list[str]) -> None:
    """Rule 2. Equal indexed texts have equal headlines (``heads``: the hits'
    ``Entry.text``, a message's words, a summary's ``text``), which are short and cheap to
    read: only hits whose headlines match have their whole indexed text (a message's date
    and context) compared."""
    by_head: dict[str, list[int]] = {}
    for i, head in enumerate(heads):
        if head:
            by_head.setdefault(head, []).append(i)
    for group in by_head.values():
        if len(group) > 1:
            cls.join_equal({i: same_text_key(_indexed(hits[i].entry)) for i in group})


def _join_derived(cls: _Classes, came_from: dict[int, set[int]]) -> set[int]:
    """Rule 3: a class whose derived members state exactly one other class joins it; one
    stating several is a span, joined to the best-ranked of them without merging the
    others; -> the hits of spans (never the form that shows). Two passes, so that a span
    whose classes merged meanwhile joins as one of them."""
    spans: set[int] = set()
    for last in (False, True):
        by_class: dict[int, set[int]] = {}
        for i, js in came_from.items():
            by_class.setdefault(cls.find(i), set()).update(js)
        for root in sorted(by_class):
            here = cls.find(root)
            targets = {cls.find(t) for t in by_class[root]} - {here}
            if len(targets) == 1:
                cls.union(here, targets.pop())
            elif len(targets) > 1 and last:
                spans.update(i for i in range(len(cls.parent)) if cls.find(i) == here)
                cls.union(here, min(targets))  # the best-ranked class it covers
    return spans


def _build(hits: Sequence[ScoredEntry], cls: _Classes, spans: set[int]) -> list[ScoredEntry]:
    """One hit per class, in the place of its best-ranked member (its root), the others in
    its ``also_in``; a span's hits never show while the class has another."""
    members: dict[int, list[int]] = {}
    for i in range(len(hits)):
        members.setdefault(cls.find(i), []).append(i)
    if len(members) == len(hits):
        return list(hits)  # nothing to collapse
    out = []
    for root in sorted(members):
        group = members[root]  # in rank order
        rep = _representative(hits, [i for i in group if i not in spans] or group)
        out.append(_with_also_in(hits[rep], [hits[i] for i in group if i != rep]))
    return out


def _representative(hits: Sequence[ScoredEntry], own: list[int]) -> int:
    """The member that shows: the newest original (ties: best-ranked), else a team's
    belief, else the derived member with the most sources (ties: best-ranked). ``own`` is
    in rank order."""
    originals = [i for i in own if not is_derived(hits[i].entry)]
    if originals:
        return max(originals, key=lambda i: (hits[i].entry.created_at, -i))
    return max(own, key=lambda i: (is_team_belief(hits[i].entry), len(hits[i].entry.source),
                                   -i))


def _with_also_in(hit: ScoredEntry, others: list[ScoredEntry]) -> ScoredEntry:
    if not others and not hit.also_in:
        return hit
    refs = dict.fromkeys(hit.also_in)
    for o in others:
        refs[EntryRef(o.scope, o.entry.id)] = None
        refs.update(dict.fromkeys(o.also_in))
    refs.pop(EntryRef(hit.scope, hit.entry.id), None)
    return replace(hit, also_in=tuple(refs))
