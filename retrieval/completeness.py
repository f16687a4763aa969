"""How complete a recall was: entries still waiting for a vector, the wait for none, and
which route and indexes answered it.

A memory is searchable by BM25 and the filters as soon as it is indexed, by meaning only
once the model has embedded it (in the background: a write never waits for the model).
Every recall says which of its hits had a vector (``ScoredEntry.has_vector``) and how many
entries of the searched scopes were still waiting (:attr:`RecallHits.dense_pending`), so a
caller can tell a BM25-only ranking from a full one. ``MemoryQuery(consistency="semantic")``
waits until the searched scopes hold no such entry (:func:`wait_embedded`), or fails with
:class:`EmbeddingBacklog` naming the backlog: it never returns a half-embedded ranking.

Every recall also says how it was answered (:attr:`RecallHits.route`, a
:class:`RouteReport`): the route that ran (:mod:`retrieval.routes`), the indexes that
answered, one note per index that did not (``dense unavailable: no embedder``, ``dense
failed: RuntimeError``, ``explore unavailable: no table of contents``) and per fallback
taken, and whether a budget cut it short (``partial``). A broken index is reported there,
never raised: the searches note it in an :class:`IndexNotes` as they go.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, SupportsIndex, overload

from blackboard import BlackboardError

from .scoring import ScoredEntry

if TYPE_CHECKING:
    from .scope_index import ScopeIndex

__all__ = ["INDEXES", "EmbeddingBacklog", "IndexNotes", "RecallHits", "RouteReport",
           "mark_vectors", "unembedded", "wait_embedded"]

#: The indexes a recall may ask, in the order a report lists them: ``explore`` is the
#: table of contents walked by keyword (:mod:`retrieval.routes`).
INDEXES = ("dense", "bm25", "explore")

#: How often a semantic-consistency wait looks at the backlog again (s).
POLL_S = 0.05


class EmbeddingBacklog(BlackboardError, TimeoutError):
    """A ``consistency="semantic"`` recall timed out before its scopes were embedded; the
    message names how many entries of which scopes were still waiting. Nothing was
    returned (a ranking by BM25 alone would pass for one by meaning)."""

    def __init__(self, pending: dict[str, int], waited_s: float) -> None:
        self.pending = pending
        self.waited_s = waited_s
        total = sum(pending.values())
        worst = sorted(pending.items(), key=lambda kv: -kv[1])[:3]
        where = ", ".join(f"{s}: {n}" for s, n in worst)
        more = f" and {len(pending) - 3} more scope(s)" if len(pending) > 3 else ""
        super().__init__(
            f"semantic consistency: {total} entr{'y' if total == 1 else 'ies'} still "
            f"waiting for a vector after {waited_s:.1f} s ({where}{more}); the embedder "
            "is behind the writes: retry later, or recall without consistency='semantic'"
        )


@dataclass(frozen=True, slots=True)
class RouteReport:
    """How a recall was answered. ``intent`` as asked; ``route`` the one whose hits came
    back: ``hybrid`` (dense and BM25, whichever answered), ``bm25`` (``locate``: BM25
    alone found them), ``explore`` (the table of contents), ``filters`` (no text: ranked
    by strength, recency and importance), ``newest`` (listed by time), ``custom`` (a
    retriever that does not report). ``indexes``: those that answered (of
    :data:`INDEXES`). ``notes``: one line per index that did not answer and why, per
    fallback taken and per budget that cut the result short (then ``partial``).
    ``nodes_visited``: table-of-contents nodes the explore route read."""

    intent: str = "answer"
    route: str = "hybrid"
    indexes: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    partial: bool = False
    nodes_visited: int = 0

    def line(self) -> str:
        """The report as one line for a person: ``route hybrid (dense, bm25)``, then the
        notes."""
        head = f"route {self.route} ({', '.join(self.indexes) or 'no index'})"
        if self.intent != "answer":
            head = f"intent {self.intent}: {head}"
        if self.partial:
            head += " PARTIAL"
        return "; ".join([head, *self.notes])


@dataclass(slots=True)
class IndexNotes:
    """What the searches of one recall learnt of each index as they went: ``answered``
    (ranked with it), ``broken`` (failed, or unavailable when wanted: a reason to fall
    back), and the last reason each index did not answer."""

    answered: set[str] = field(default_factory=set)
    broken: set[str] = field(default_factory=set)
    why: dict[str, str] = field(default_factory=dict)

    def ok(self, index: str) -> None:
        self.answered.add(index)

    def missed(self, index: str, reason: str, *, broken: bool = True) -> None:
        """``index`` did not answer, for ``reason`` (``broken``: it failed or is missing,
        as opposed to not being asked)."""
        self.why[index] = reason
        if broken:
            self.broken.add(index)

    def indexes(self) -> tuple[str, ...]:
        return tuple(i for i in INDEXES if i in self.answered)

    def reasons(self) -> list[str]:
        """Why each index that never answered did not (an index that answered in one of
        the recall's searches answered it)."""
        order = {i: n for n, i in enumerate(INDEXES)}
        return [self.why[i] for i in sorted(self.why, key=lambda i: order.get(i, len(order)))
                if i not in self.answered]


class RecallHits(list[ScoredEntry]):
    """A recall's hits, best first, with what describes the search that found them:
    ``dense_pending``, entries of the searched scopes still waiting for a vector when it
    ran (they could rank by BM25 and the filters only); ``route``, how it was answered
    (:class:`RouteReport`); ``nodes``, the table-of-contents nodes the explore route
    returned (as its walk gave them)."""

    dense_pending: int = 0
    route: RouteReport = RouteReport()
    nodes: list[Any]

    def __init__(self, hits: Iterable[ScoredEntry] = (), dense_pending: int = 0,
                 route: RouteReport | None = None, nodes: Iterable[Any] = ()) -> None:
        super().__init__(hits)
        self.dense_pending = dense_pending
        if route is not None:
            self.route = route
        self.nodes = list(nodes)

    @classmethod
    def like(cls, search: Sequence[ScoredEntry], hits: Iterable[ScoredEntry]) -> RecallHits:
        """``hits`` described as ``search`` was (a re-ordered or cut list of its hits);
        ``search`` a plain list (a retriever that does not report): route ``custom``."""
        if isinstance(search, RecallHits):
            return cls(hits, search.dense_pending, search.route, search.nodes)
        return cls(hits, route=RouteReport(route="custom"))

    @overload
    def __getitem__(self, i: SupportsIndex) -> ScoredEntry: ...
    @overload
    def __getitem__(self, i: slice) -> RecallHits: ...

    def __getitem__(self, i: SupportsIndex | slice) -> ScoredEntry | RecallHits:
        # a slice (``hits[:k]``) keeps the count: it describes the search, not the list
        if isinstance(i, slice):
            return RecallHits(super().__getitem__(i), self.dense_pending, self.route,
                              self.nodes)
        return super().__getitem__(i)


def scope_unembedded(cat: ScopeIndex) -> int:
    """Live rows of ``cat`` without a vector."""
    import numpy as np  # here: the remote client imports this module and needs no numpy

    n = cat.alive.n
    return int(np.count_nonzero(cat.alive.a[:n] & ~cat.has_vec.a[:n]))


def unembedded(cats: Sequence[ScopeIndex], has_embedder: bool) -> dict[str, int]:
    """Per scope of ``cats``, live entries still waiting for a vector (scopes with none
    left out; nothing waits without an embedder: those rank by BM25 by design)."""
    if not has_embedder:
        return {}
    out = {c.scope: scope_unembedded(c) for c in cats}
    return {s: n for s, n in out.items() if n}


def mark_vectors(hits: Sequence[ScoredEntry], cats: dict[str, ScopeIndex],
                 semantic: bool) -> list[ScoredEntry]:
    """``hits`` with ``has_vector`` set (caller holds the lock): for a search by meaning
    (``semantic``: a text query and an embedder), whether the hit got a cosine, i.e. had
    its vector when ranked; otherwise whether its scope's index holds one now."""
    out = []
    for h in hits:
        if semantic:
            has = h.dense is not None
        else:
            cat = cats.get(h.scope)
            row = cat.row_of.get(h.entry.id) if cat is not None else None
            has = bool(cat.has_vec.a[row]) if cat is not None and row is not None else False
        out.append(h if h.has_vector == has else replace(h, has_vector=has))
    return out


async def wait_embedded(
    pending: Callable[[], dict[str, int]],
    wake: Callable[[], Awaitable[None] | None],
    timeout_s: float,
) -> None:
    """Return once ``pending()`` is empty; :class:`EmbeddingBacklog` after ``timeout_s``.
    ``wake`` asks the embedder to go on (it may be idle between batches)."""
    t0 = time.monotonic()
    while True:
        left = pending()
        if not left:
            return
        waited = time.monotonic() - t0
        if waited >= timeout_s:
            raise EmbeddingBacklog(left, waited)
        w = wake()
        if w is not None:
            await w
        await asyncio.sleep(min(POLL_S, max(0.0, timeout_s - waited)))
