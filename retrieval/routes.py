"""Routes by intent, the explore route's registry, and a recall's budgets.

A recall's :data:`~retrieval.query.Intent` picks its route; every index is an accelerator
that may be missing or broken, and the recall falls back instead of failing:

========== ============================== ==========================================
intent     first                          then
========== ============================== ==========================================
answer     hybrid (dense + BM25)          + explore when dense or BM25 did not answer
locate     BM25 alone                     hybrid when BM25 found nothing
explore    the table of contents          hybrid when it is missing or found nothing
time_boxed hybrid, within its budget      explore if time is left; never past it
========== ============================== ==========================================

The explore route walks a table of contents by keyword (:class:`ExploreRoute`): by default
:func:`~retrieval.toc_walk.walk_toc`, the tables the ``timeline`` worker role keeps; another
is registered with :func:`register_explore_route`, and with none (``None`` registered) the
route reports ``explore unavailable: no table of contents``. The hits it returns
are the walk's raw entries, under the query's hard filters, in the walk's order.

:class:`RouteRun` carries one recall through its route: the deadline (``timeout_ms``), the
notes of each index (:class:`~retrieval.completeness.IndexNotes`), the fallbacks taken
and the token budget, and ends as its :class:`~retrieval.completeness.RouteReport`.
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import time
from collections.abc import Awaitable, Sequence
from typing import Any, Protocol, TypeVar

from blackboard import Blackboard, Entry

from .completeness import IndexNotes, RouteReport
from .query import MemoryQuery
from .scope_index import ScopeDecay
from .scoring import ScoredEntry, ScoringConfig, entry_strength, recency
from .text import estimate_tokens
from .toc_walk import walk_toc

__all__ = ["ExploreRoute", "RouteRun", "TocWalkResult", "explore_hits", "explore_route",
           "register_explore_route"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class TocWalkResult(Protocol):
    """What a walk of the table of contents returns: the raw ``entries`` it found (best
    first), the ``nodes`` it returned (summaries, read as they are) and how many nodes it
    read."""

    @property
    def entries(self) -> Sequence[Entry]: ...

    @property
    def nodes(self) -> Sequence[Any]: ...

    @property
    def nodes_visited(self) -> int: ...


class ExploreRoute(Protocol):
    """``await walk(board, scopes, text, max_depth=..., max_nodes=...)``: the table of
    contents of ``scopes`` (already access-checked; read as ``board``'s user) walked by
    keyword matching of its node summaries, bounded by ``max_depth`` and ``max_nodes``."""

    def __call__(self, board: Blackboard, scopes: Sequence[str], text: str, *,
                 max_depth: int = ..., max_nodes: int = ...) -> Awaitable[TocWalkResult]: ...


_explore: ExploreRoute | None = walk_toc


def register_explore_route(route: ExploreRoute | None) -> ExploreRoute | None:
    """Make ``route`` the explore route of every recall in this process (None: none);
    returns the one it replaces."""
    global _explore
    old, _explore = _explore, route
    return old


def explore_route() -> ExploreRoute | None:
    """The registered explore route (None: there is no table of contents to walk)."""
    return _explore


class RouteRun:
    """One recall on its way: ``q``'s deadline and budget, the notes of every index, the
    route that answered and the notes of fallbacks and cuts."""

    def __init__(self, q: MemoryQuery) -> None:
        self.q = q
        ms = q.deadline_ms
        self.deadline = None if ms is None else time.monotonic() + ms / 1000
        self.indexes = IndexNotes()
        self.route = "hybrid" if q.query is not None else "filters"
        self.notes: list[str] = []
        self.partial = False
        self.nodes: list[Any] = []
        self.nodes_visited = 0

    # -- time ------------------------------------------------------------------------------

    def left(self) -> float | None:
        """Seconds left before the deadline (None: no deadline; never below 0)."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    async def within(self, aw: Awaitable[T], what: str, *, keep: bool = False) -> T | None:
        """``await aw`` until the deadline; past it None, the result marked partial
        (``what`` was not finished). ``keep``: the work goes on in the background (an
        index being loaded keeps what it loaded), else it is cancelled."""
        left = self.left()
        if left is None:
            return await aw
        task = asyncio.ensure_future(aw)
        if left > 0:
            await asyncio.wait({task}, timeout=left)
        else:  # one step: work with nothing to do (an index already loaded) ends in it
            await asyncio.sleep(0)
        if task.done():
            return task.result()
        if keep:  # its outcome is the next caller's; not left unretrieved
            task.add_done_callback(lambda t: t.cancelled() or t.exception())
        else:
            task.cancel()
        self.cut(f"timeout_ms={self.q.deadline_ms} reached {what}")
        return None

    def cut(self, note: str) -> None:
        self.partial = True
        self.note(note)

    def note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    # -- budget ----------------------------------------------------------------------------

    def within_budget(self, hits: list[ScoredEntry]) -> list[ScoredEntry]:
        """``hits`` best first while their text fits ``budget_tokens`` (one too long for
        what is left is left out, a shorter one after it may still fit)."""
        budget = self.q.budget_tokens
        if budget is None:
            return hits
        out, used = [], 0
        for h in hits:
            n = estimate_tokens(h.entry.text)
            if used + n <= budget:
                out.append(h)
                used += n
        if len(out) < len(hits):
            self.cut(f"budget_tokens={budget}: {len(hits) - len(out)} hit(s) left out "
                     f"({used} tokens kept)")
        return out

    # -- report ----------------------------------------------------------------------------

    def degraded(self) -> bool:
        """Whether an index the text search wanted failed or was missing."""
        return self.q.query is not None and bool(self.indexes.broken & {"dense", "bm25"})

    def report(self) -> RouteReport:
        if self.route == "filters":  # no text: no index was asked, by design
            notes = [n for n in self.indexes.reasons() if n.startswith("ranking")]
        else:
            notes = self.indexes.reasons()
        return RouteReport(intent=self.q.intent, route=self.route,
                           indexes=self.indexes.indexes(),
                           notes=tuple(dict.fromkeys([*notes, *self.notes])),
                           partial=self.partial, nodes_visited=self.nodes_visited)


async def walk(run: RouteRun, bb: Blackboard, scopes: Sequence[str]) -> list[Entry] | None:
    """The registered explore route walked for ``run``'s query text within its deadline:
    its entries (None, noted, when there is no route, no text, or it failed or ran out of
    time). Its nodes and count are kept in ``run``."""
    route, text = explore_route(), run.q.query
    if route is None:
        run.indexes.missed("explore", "explore unavailable: no table of contents")
        return None
    if text is None:
        run.indexes.missed("explore", "explore not asked: no query text", broken=False)
        return None
    try:
        got = await run.within(route(bb, scopes, text), "while walking the table of contents")
    except Exception as exc:  # an accelerator like the others: reported, never raised
        log.warning("the explore route failed (%s: %s)", type(exc).__name__, exc,
                    exc_info=exc)
        run.indexes.missed("explore", f"explore failed: {type(exc).__name__}")
        return None
    if got is None:
        run.indexes.missed("explore", "explore stopped: out of time")
        return None
    run.nodes_visited += int(got.nodes_visited)
    if not got.nodes:
        # No node matched the text nor lay in a period it names: the segments the walk
        # reached are where it browsed, not what it found (a nonsense word fused them in).
        run.indexes.missed("explore", "explore found nothing: no node matched", broken=False)
        return []
    run.nodes = list(got.nodes)
    run.indexes.ok("explore")
    return list(got.entries)


def explore_hits(entries: Sequence[Entry], q: MemoryQuery, scopes: Sequence[str], now: int,
                 decay: dict[str, ScopeDecay], config: ScoringConfig) -> list[ScoredEntry]:
    """The walk's ``entries`` as hits, in its order: only those of ``scopes`` that pass
    ``q``'s hard filters (tags, time range, key glob, minimum strength; expired ones
    never), each once. A hit's relevance is its place (``1 / (1 + rank)``: the walk ranks
    by keyword, not by a score comparable with the indexes'), its score that relevance."""
    allowed = set(scopes)
    tf, lo_hi, glob = q.tag_filter, q.time_range, q.key_pattern
    seen: set[str] = set()
    out: list[ScoredEntry] = []
    for e in entries:
        if e.id in seen or e.scope not in allowed or e.expired(now):
            continue
        if not tf.matches(e.tags):
            continue
        if lo_hi is not None and not lo_hi[0] <= e.created_at <= lo_hi[1]:
            continue
        if glob is not None and (e.key is None or not fnmatch.fnmatchcase(e.key, glob)):
            continue
        d = decay.get(e.scope, ScopeDecay())
        strength = entry_strength(e, now, d.rate, d.tick_ms)
        if q.min_strength is not None and strength < q.min_strength:
            continue
        seen.add(e.id)
        rel = 1.0 / (1 + len(out))
        rec = float(recency([e.created_at], now, config.recency_half_life_ms)[0])
        out.append(ScoredEntry(e, e.scope, None, None, rel, strength, rec, e.importance, rel))
    return out
