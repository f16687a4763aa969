"""Index-free search: walk the scopes' tables of contents from the top, reading node
summaries and keywords, drilling into the best-matching nodes (no dense or BM25 index, no
embedder: only the nodes and, at the end, the entries of the segments reached).

Best first over every scope at once: a node's priority is how well its keywords and
summary match the text's terms, weighed against its siblings' (a word every sibling holds,
such as a speaker's name, tells nothing apart), plus half its parent's priority. A period
the text names ("in May 2023", resolved against the newest time the scopes hold) prunes
every node outside it by its id, unread. Every node read counts as visited; the walk stops
at ``max_nodes`` read or ``max_depth`` levels below the root (5: segments).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from blackboard import Blackboard, Entry
from blackboard.toc import TocStore

from .analyzer import Analyzer
from .text import entry_text
from .timeline import resolve_periods
from .toc import ROOT_ID, Level, TocNode, span_of

__all__ = ["TocWalk", "walk_toc"]

_ANALYZER = Analyzer()


@dataclass(frozen=True)
class TocWalk:
    """What a walk found: ``entries``, the raw entries of the segments reached, best first;
    ``nodes``, the nodes read whose keywords or summary matched (or that lie in the period
    the text names), best first; ``nodes_visited``, how many nodes were read."""

    entries: list[Entry]
    nodes: list[TocNode]
    nodes_visited: int
    #: segments reached, best first (their entries are ``entries``' sources)
    segments: list[TocNode] = field(default_factory=list)


#: (scope, id, count, summary) -> the node's terms: a node changes only as it grows, and
#: walks read the same upper nodes again and again.
_TERMS: dict[tuple[str, str, int, str], frozenset[str]] = {}
_TERMS_MAX = 8192


def _terms(node: TocNode) -> frozenset[str]:
    key = (node.scope, node.id, node.count, node.summary)
    got = _TERMS.get(key)
    if got is None:
        text = " ".join([*node.keywords, *node.actors, node.summary])
        got = frozenset(_ANALYZER.terms([text])[0]) if text.strip() else frozenset()
        if len(_TERMS) >= _TERMS_MAX:
            _TERMS.clear()
        _TERMS[key] = got
    return got


def _in(periods: Sequence[tuple[int, int]], node_id: str) -> bool:
    if not periods:
        return True
    got = span_of(node_id)
    if got is None:
        return False
    _, a, b = got
    return any(a <= pe and b >= ps for ps, pe in periods)


def _within(periods: Sequence[tuple[int, int]], n: TocNode) -> bool:
    return any(ps <= n.start_ms and n.end_ms <= pe for ps, pe in periods)


class _Walk:
    def __init__(self, bb: Blackboard, text: str, max_depth: int, max_nodes: int) -> None:
        self.bb = bb
        self.q = set(_ANALYZER.query_terms(text))
        self.text = text
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.visited = 0
        self.matched: list[tuple[tuple[float, int, float], int, TocNode]] = []
        self.segments: list[tuple[float, int, TocNode]] = []
        self.frontier: list[tuple[float, int, str, TocNode]] = []
        self.seq = 0
        self.periods: list[tuple[int, int]] = []

    async def read(self, scope: str, ids: Sequence[str]) -> list[TocNode]:
        ids = list(ids)[: max(0, self.max_nodes - self.visited)]
        if not ids:
            return []
        snap = await TocStore(self.bb, scope).read(ids)
        self.visited += len(ids)
        return [n for i in ids if (n := TocNode.from_json(scope, i, snap.nodes[i])) is not None]

    def score(self, group: Sequence[TocNode]) -> list[float]:
        """Each node's match against the text, idf over its siblings."""
        terms = [_terms(n) for n in group]
        n = len(group)
        out = []
        for ts in terms:
            s = 0.0
            for q in self.q & ts:
                df = sum(1 for other in terms if q in other)
                s += math.log(1 + (n + 1) / df)
            out.append(s)
        return out

    def push(self, group: Sequence[TocNode], parent: float) -> None:
        for node, s in zip(group, self.score(group), strict=True):
            fit = bool(self.periods) and _within(self.periods, node)
            prio = s + 0.5 * parent + (4.0 - 0.1 * node.level.depth if fit else 0.0)
            self.seq += 1
            if s > 0 or fit:
                # the coarsest node lying in the period first (the month of "in May"),
                # then by match
                rank = (1.0, -node.level.depth, prio) if fit else (0.0, 0, prio)
                self.matched.append((rank, self.seq, node))
            if node.level is Level.SEGMENT:
                self.segments.append((prio, self.seq, node))
            elif node.level.depth < self.max_depth and node.children:
                heapq.heappush(self.frontier, (-prio, self.seq, node.scope, node))

    async def run(self, scopes: Sequence[str]) -> None:
        roots = [r for s in scopes for r in await self.read(s, [ROOT_ID])]
        if not roots:
            return
        self.periods = resolve_periods(self.text, max(r.end_ms for r in roots))
        for r in roots:
            self.seq += 1
            heapq.heappush(self.frontier, (0.0, self.seq, r.scope, r))
        while self.frontier and self.visited < self.max_nodes:
            neg, _, scope, node = heapq.heappop(self.frontier)
            kids = [c for c in node.children if _in(self.periods, c)]
            self.push(await self.read(scope, kids), -neg)


async def _entries(bb: Blackboard, segments: Sequence[TocNode], q: set[str]) -> list[Entry]:
    """The segments' entries, segment by segment (best first), each segment's best-matching
    entries first."""
    out: list[Entry] = []
    for seg in segments:
        got = [e for e in await bb.scope(seg.scope).get_many(list(seg.entries)) if e is not None]
        if not got:
            continue
        terms = _ANALYZER.terms([entry_text(e) for e in got])
        ranked = sorted(range(len(got)), key=lambda i: (-len(q.intersection(terms[i])), i))
        out += [got[i] for i in ranked]
    return out


async def walk_toc(board: Blackboard, scopes: Sequence[str], text: str, *,
                   max_depth: int = 5, max_nodes: int = 20) -> TocWalk:
    """Walk the tables of contents of ``scopes`` for ``text`` (see the module doc): never
    needs an index or an embedder. Scopes are read as given (the caller checks access; a
    confined agent's connection is refused by Redis for a foreign scope)."""
    w = _Walk(board, text, max_depth, max_nodes)
    await w.run(list(scopes))
    nodes = [n for _, _, n in sorted(w.matched, key=lambda t: (tuple(-x for x in t[0]), t[1]))]
    segs = [n for _, _, n in sorted(w.segments, key=lambda t: (-t[0], t[1]))]
    return TocWalk(await _entries(board, segs, w.q), nodes, w.visited, segs)
