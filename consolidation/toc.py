"""Building a scope's table of contents (:mod:`retrieval.toc`) from its entries: the
``timeline`` transformer, applied by the ``timeline`` worker role, and the rebuild.

Each entry lands in one segment of its day: the segment whose span it extends by less than
:data:`GAP_MS` (and which holds fewer than :data:`MAX_SEGMENT` entries), else a new one.
The segment and its day, week, month, year and the root grow by it: span, count, tag,
keyword and actor counts (the most frequent kept), and a summary chosen by the summarizer's
LLM-free LexRank (:func:`consolidation.summarize.select_sentences`) from the node's
previous summary and what was added (a segment: the new entries' sentences; above: the
changed child's summary), within a budget per level. So a change costs the few nodes above
the entries, never a pass over the scope.

Exactly once: an entry's placement (``tocin``) is written in the same ``toc.lua`` call as
the nodes it changed, compare-and-set on the table's version; a replayed batch finds its
entries placed and changes nothing, and a change computed from a stale read is refused
and computed again. Deleted entries are not taken out (the bus carries no deletions):
:func:`rebuild` recounts a scope from what it holds.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from blackboard import Blackboard, Entry
from blackboard.toc import PLACED, TocStore
from retrieval.text import MAIN_TEXT_KEYS, event_time_ms, is_said
from retrieval.toc import ROOT_ID, Level, TocNode, keywords_of, node_ids_for, span_of, top

from .draft import Draft
from .signals import occurred_at
from .summarize import SummarizeParams, select_sentences
from .text import count_tokens, entry_text, split_sentences, tfidf_matrix, truncate_tokens
from .transformer import TransformContext, register_transformer

__all__ = ["GAP_MS", "MAX_SEGMENT", "TocChange", "apply_entries", "plan", "rebuild", "timeline"]

#: A pause longer than this starts a new segment.
GAP_MS = 30 * 60 * 1000
#: A segment holds at most this many entries (a long unbroken run is cut).
MAX_SEGMENT = 100
#: Summary budget (tokens) per level.
BUDGET = {Level.SEGMENT: 60, Level.DAY: 60, Level.WEEK: 70, Level.MONTH: 80, Level.YEAR: 90,
          Level.ROOT: 100}
#: Candidate sentences a segment's summary is chosen from per change: its previous summary
#: and at most this many of the new entries' sentences (bounds the LexRank's cost).
NEW_SENTENCES = 24
#: Counts kept per node: the most frequent. A segment keeps nearly all its words (a
#: question's telling word is often said once), the levels above fewer.
KEEP = {"tags": 24, "keywords": 128, "actors": 16}
SEGMENT_KEYWORDS = 240
#: Attempts of a change whose table changed under it (another writer, a rebuild).
ATTEMPTS = 8


def entry_time(e: Entry) -> int:
    """When the entry's content happened: a message's time, a copy's origin time, else
    when it was written."""
    t = event_time_ms(e)
    return t if t != e.created_at else occurred_at(e)


def _facts(e: Entry) -> tuple[int, str, list[str]]:
    """An entry's time (:func:`entry_time`), its text for keywords and summaries
    (``speaker: text`` for a message) and its actors: who speaks in a message (the
    speaker it names: a claim, shown as what was said), else its author. A plain dict is
    read directly: this runs for every event of the role."""
    v = e.value
    if type(v) is dict and v.get("kind") == "message":
        who, text = v.get("speaker"), v.get("text")
        t = event_time_ms(e)
        body = text if isinstance(text, str) else entry_text(e)
        if isinstance(who, str) and who:
            return t, f"{who}: {body}", [who[:64]]
        return t, body, [e.author] if e.author else []
    t = entry_time(e)
    text = _readable(e)
    who = (e.metadata or {}).get("speaker") if is_said(e) else None
    if isinstance(who, str) and who:
        return t, f"{who}: {text}", [who[:64]]
    return t, text, [e.author] if e.author else []


def _readable(e: Entry) -> str:
    """The entry's main text; a structured value without one (an episode, a procedure)
    reads as its string fields, one a line (each a sentence to the summarizer), not as its
    JSON: braces, field names and epoch ms made the demo's summaries unreadable and its
    keywords ``actors end null open``."""
    v = e.value
    if isinstance(v, Mapping) and not any(
            isinstance(v.get(k), str) and v[k].strip() for k in MAIN_TEXT_KEYS):
        lines = list(_string_leaves(v))
        if lines:
            return "\n".join(lines)
    return entry_text(e)


def _string_leaves(v: object, depth: int = 0) -> Iterable[str]:
    if depth > 6:
        return
    if isinstance(v, str):
        if v.strip():
            yield v.strip()
    elif isinstance(v, Mapping):
        for x in v.values():
            yield from _string_leaves(x, depth + 1)
    elif isinstance(v, list | tuple):
        for x in v:
            yield from _string_leaves(x, depth + 1)


def _summary(prev: str, new: Sequence[str], budget: int) -> str:
    """LexRank over the previous summary's sentences and the new ones, within ``budget``
    (the summarizer's choice: central, not redundant, in their order)."""
    cands = list(dict.fromkeys(s for s in [*split_sentences(prev), *new] if s))
    # Greetings and interjections ("Hey Mel!") are central to any chat and say nothing of
    # what happened: a sentence of three content words or more is preferred.
    telling = [s for s in cands if len(keywords_of(s)) >= 3]
    cands = telling or cands
    if not cands:
        return ""
    if len(cands) == 1:
        return truncate_tokens(cands[0], budget)
    total = sum(count_tokens(c) for c in cands)
    # When every candidate fits, the budget never binds: the choice is the same at every
    # level, and a chain of single children (a day's week, month, year, root) asks for
    # the same candidates again and again.
    return _chosen(tuple(cands), budget if total > budget else 0)


@functools.lru_cache(maxsize=256)
def _chosen(cands: tuple[str, ...], budget: int) -> str:
    """LexRank's choice among ``cands`` within ``budget`` tokens (0: they all fit)."""
    v = tfidf_matrix(cands)
    params = SummarizeParams(budget=budget or sum(count_tokens(c) for c in cands))
    chosen = select_sentences(cands, v @ v.T, params)
    if not chosen:
        return truncate_tokens(cands[0], budget)
    return " ".join(cands[i] for i in chosen)


@dataclass
class _Acc:
    """A node being changed: its stored state plus what this change adds."""

    node: TocNode
    tags: Counter[str] = field(default_factory=Counter)
    keywords: Counter[str] = field(default_factory=Counter)
    actors: Counter[str] = field(default_factory=Counter)
    added: int = 0
    start: int = 2**62
    end: int = -1
    children: list[str] = field(default_factory=list)
    entries: list[str] = field(default_factory=list)
    #: a segment's new texts, a parent's changed children's summaries
    texts: list[str] = field(default_factory=list)
    #: what :meth:`add` took (tags, keywords, actors), counted once by :meth:`count`: a
    #: ``Counter.update`` per entry and field costs its type checks every time
    pending: tuple[list[str], list[str], list[str]] = field(
        default_factory=lambda: ([], [], []))

    def add(self, t: int, tags: Iterable[str], kws: Iterable[str], actors: Iterable[str]) -> None:
        self.added += 1
        self.start, self.end = min(self.start, t), max(self.end, t)
        self.pending[0].extend(tags)
        self.pending[1].extend(kws)
        self.pending[2].extend(actors)

    def count(self) -> None:
        """Count what :meth:`add` took into the counters (then nothing is left pending)."""
        for counter, taken in zip((self.tags, self.keywords, self.actors), self.pending,
                                  strict=True):
            if taken:
                counter.update(taken)
                taken.clear()

    def absorb(self, child: _Acc) -> None:
        """What ``child`` (a segment, or a changed node below) adds, counted here too."""
        child.count()
        self.added += child.added
        self.start, self.end = min(self.start, child.start), max(self.end, child.end)
        self.tags.update(child.tags)
        self.keywords.update(child.keywords)
        self.actors.update(child.actors)

    def done(self) -> TocNode:
        self.count()
        n = self.node

        def merged(old: dict[str, int], new: Counter[str], k: str) -> dict[str, int]:
            c = Counter(old)
            c.update(new)
            return top(c, KEEP[k])

        children = list(n.children) + [c for c in self.children if c not in n.children]
        first = n.count == 0
        count = n.count + self.added
        # The summary is chosen again when the count has doubled since it last was: a
        # node summarised O(log n) times, not once per batch (the LexRank is most of the
        # cost of a change).
        again = not n.summary or count >= 2 * max(1, n.summarized)
        sentences: list[str] = []
        for t in self.texts if again else ():
            sentences += split_sentences(t)
            if len(sentences) >= NEW_SENTENCES:
                break
        known = set(n.entries)
        return replace(
            n, count=count,
            start_ms=self.start if first else min(n.start_ms, self.start),
            end_ms=self.end if first else max(n.end_ms, self.end),
            tags=merged(n.tags, self.tags, "tags"),
            keywords=top(Counter(n.keywords) + self.keywords,
                         SEGMENT_KEYWORDS if n.level is Level.SEGMENT else KEEP["keywords"]),
            actors=merged(n.actors, self.actors, "actors"),
            children=tuple(sorted(children, key=_order)),
            entries=n.entries + tuple(e for e in self.entries if e not in known),
            summary=_summary(n.summary, sentences, BUDGET[n.level]) if again else n.summary,
            summarized=count if again else n.summarized,
        )


def _order(node_id: str) -> tuple[str, int]:
    day, _, k = node_id.partition(".")
    return day, int(k) if k.isdigit() else 0


def _empty(scope: str, node_id: str) -> TocNode:
    got = span_of(node_id)
    level = got[0] if got else Level.SEGMENT
    return TocNode(node_id, level, scope, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class TocChange:
    """The nodes a change writes (id -> node) and the entries it places (id -> segment)."""

    nodes: dict[str, TocNode]
    placed: dict[str, str]


def _segment_for(t: int, segs: list[TocNode], accs: Mapping[str, _Acc]) -> TocNode | None:
    best, gap = None, GAP_MS + 1
    for s in segs:
        a = accs.get(s.id)
        lo = min(s.start_ms, a.start) if a and s.count == 0 else s.start_ms
        hi = max(s.end_ms, a.end) if a else s.end_ms
        size = s.count + (a.added if a else 0)
        d = 0 if lo <= t <= hi else min(abs(t - lo), abs(t - hi))
        if size < MAX_SEGMENT and d < gap:
            best, gap = s, d
    return best if gap <= GAP_MS else None


def plan(scope: str, entries: Sequence[Entry], stored: Mapping[str, TocNode | None]) -> TocChange:
    """The change placing ``entries`` (none placed yet) into the table whose nodes are
    ``stored`` (id -> node or None: every ancestor of the entries' days and those days'
    segments). Pure: the same inputs make the same change."""
    accs: dict[str, _Acc] = {}

    def acc(node_id: str) -> _Acc:
        if node_id not in accs:
            accs[node_id] = _Acc(stored.get(node_id) or _empty(scope, node_id))
        return accs[node_id]

    placed: dict[str, str] = {}
    # segment id -> its day, week, month and year ids
    above: dict[str, tuple[str, str, str, str]] = {}
    last: tuple[str, TocNode] | None = None
    days: dict[int, tuple[str, str, str, str]] = {}
    facts = sorted(((*_facts(e), e) for e in entries), key=lambda p: (p[0], p[3].id))
    for t, text, actors, e in facts:
        if (ids := days.get(t // 86_400_000)) is None:
            ids = days[t // 86_400_000] = node_ids_for(t)
        y, m, w, d = ids
        seg = None
        if last is not None and last[0] == d:  # in time order: mostly the same segment
            seg = _segment_for(t, [last[1]], accs)
        if seg is None:
            day = acc(d)
            segs = [s for c in [*day.node.children, *day.children]
                    if (s := (accs[c].node if c in accs else stored.get(c))) is not None]
            seg = _segment_for(t, segs, accs)
            if seg is None:
                k = len(day.node.children) + len(day.children)
                seg = _empty(scope, f"s{d[1:]}.{k}")
                day.children.append(seg.id)
        last = (d, seg)
        into = acc(seg.id)
        above[seg.id] = (d, w, m, y)
        into.entries.append(e.id)
        into.texts.append(text)
        into.add(t, e.tags, keywords_of(text), actors)
        placed[e.id] = seg.id
    # Every changed segment counts in its day, week, month, year and the root.
    for sid, (d, w, m, y) in above.items():
        for node_id in (d, w, m, y, ROOT_ID):
            acc(node_id).absorb(accs[sid])
        for parent, child in ((d, sid), (w, d), (m, w), (y, m), (ROOT_ID, y)):
            p = acc(parent)
            if child not in p.node.children and child not in p.children:
                p.children.append(child)
    # Summaries bottom up: a parent chooses from its changed children's new summaries.
    out: dict[str, TocNode] = {}
    for level in (Level.SEGMENT, Level.DAY, Level.WEEK, Level.MONTH, Level.YEAR, Level.ROOT):
        for node_id, a in sorted(accs.items()):
            if a.node.level is not level:
                continue
            if level is not Level.SEGMENT:
                a.texts = [" ".join(split_sentences(out[c].summary)[:2])
                           for c in sorted(set(a.children) | set(a.node.children)) if c in out]
            out[node_id] = a.done()
    return TocChange(out, placed)


def _needed(entries: Sequence[Entry]) -> list[str]:
    ids: set[str] = {ROOT_ID}
    for e in entries:
        ids.update(node_ids_for(entry_time(e)))
    return sorted(ids)


async def apply_entries(bb: Blackboard, scope: str, entries: Sequence[Entry]) -> int:
    """Place ``entries`` of ``scope`` in its table of contents (those not placed yet);
    -> how many were placed. Safe to repeat and to run beside another writer."""
    store = TocStore(bb, scope)
    uniq = list({e.id: e for e in entries if e.scope == scope}.values())
    # Placements are read only after toc.lua said one is there (a replay): a first
    # delivery costs no read of them (toc.lua refuses a change placing an entry twice).
    check = False
    for _ in range(ATTEMPTS):
        placed = await store.placed([e.id for e in uniq]) if check else {}
        new = [e for e in uniq if e.id not in placed]
        if not new:
            return 0
        ids = _needed(new)
        snap = await store.read(ids)
        stored = {i: TocNode.from_json(scope, i, snap.nodes[i]) for i in ids}
        segs = [c for i in ids if i.startswith("d") and (n := stored[i]) for c in n.children]
        if segs:
            more = await store.read(segs)
            if more.version != snap.version:
                continue
            stored.update({i: TocNode.from_json(scope, i, more.nodes[i]) for i in segs})
        change = plan(scope, new, stored)
        nodes = {i: n.to_json() for i, n in change.nodes.items()}
        got = await store.apply(snap.version, nodes, change.placed)
        if got >= 0:
            return len(new)
        check = check or got == PLACED
    raise RuntimeError(f"the table of contents of {scope!r} changed {ATTEMPTS} times while "
                       "one batch was placed")


async def rebuild(bb: Blackboard, scope: str, *, chunk: int = 500) -> int:
    """Build ``scope``'s table of contents again from the entries it holds (deleted ones
    drop out); -> how many entries it covers. Entries the ``timeline`` role places meanwhile
    are placed once, by whichever writer comes first."""
    store = TocStore(bb, scope)
    await store.reset()
    es = await bb.scope(scope).entries(limit=None, newest_first=False)
    es.sort(key=lambda e: (entry_time(e), e.id))
    n = 0
    for i in range(0, len(es), chunk):
        n += await apply_entries(bb, scope, es[i:i + chunk])
    return n


class Timeline:
    """The ``timeline`` transformer: names the edges whose source scopes get a table of
    contents. It writes no entries: its role (``workers.roles.timeline``) places the
    batch's entries with :func:`apply_entries` instead of writing drafts."""

    name = "timeline"
    version = "1"
    #: an updated entry is the same entry, already placed
    reads_updates = False

    async def __call__(self, batch: Sequence[Entry], ctx: TransformContext) -> list[Draft]:
        return []


timeline = register_transformer(Timeline(), role="timeline")

