"""Citations: the raw entries a hit stands on.

A derived entry -- a copy (``metadata["origin_id"]``), a summary, an episode, a belief, a
team copy (``Entry.source``: the ids it was made from, recorded by the dataflow) -- is
only as good as the entries it was made from. Every hit carries them in ``cites``: the
ids reached by following ``origin_id`` and ``source`` back, through the entries the
index holds, to entries that derive from nothing (the raw ones). A source the index does
not hold (deleted, or in a scope not searched) is cited by its id as recorded: the
deepest one known. A raw entry cites nothing (``()``): it is its own evidence.

Bounded (:data:`DEPTH` steps, :data:`MAX_CITES` ids): a summary of a large batch cites
its first sources only, a cycle of claims ends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from blackboard import Entry

from .scoring import ScoredEntry

__all__ = ["DEPTH", "MAX_CITES", "cite", "cites_of"]

#: Derivation steps followed: a team belief of copies of a member's summary of copies of
#: steps is four.
DEPTH = 5
#: At most this many ids per hit.
MAX_CITES = 64

Lookup = Callable[[str], Entry | None]


def _parents(e: Entry) -> list[str]:
    """What ``e`` was made from: its origin (a copy) and its sources, in that order."""
    md = e.metadata
    origin = md.get("origin_id") if md else None
    out = [origin] if isinstance(origin, str) and origin != e.id else []
    out.extend(s for s in e.source if s != e.id and s not in out)
    return out


def cites_of(e: Entry, lookup: Lookup | None = None) -> tuple[str, ...]:
    """The raw entries ``e`` stands on (``()``: it is raw), as the module says; without
    ``lookup``, its parents as recorded."""
    first = _parents(e)
    if not first:
        return ()
    out: dict[str, None] = {}
    seen = {e.id}
    frontier = first
    for step in range(DEPTH):
        nxt: list[str] = []
        for x in frontier:
            if x in seen:
                continue
            seen.add(x)
            got = lookup(x) if lookup is not None else None
            parents = _parents(got) if got is not None else []
            if not parents or step == DEPTH - 1:
                out[x] = None  # raw, not held here, or as deep as we go
                if len(out) >= MAX_CITES:
                    return tuple(out)
            else:
                nxt.extend(parents)
        if not nxt:
            break
        frontier = nxt
    return tuple(out)


def cite(hits: Sequence[ScoredEntry], lookup: Lookup | None = None) -> list[ScoredEntry]:
    """``hits`` each with its ``cites`` (only derived entries change: the common raw
    hit costs one look at its metadata and sources)."""
    out = []
    for h in hits:
        c = cites_of(h.entry, lookup)
        out.append(h if c == h.cites else replace(h, cites=c))
    return out
