"""Listing one scope's entries by tags and time from its indexes (never a scan): the index
walks behind :meth:`Reads.listing <blackboard.reads.Reads.listing>` (``Scope.entries``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .entry import Entry

if TYPE_CHECKING:
    from .scope import Scope

__all__ = ["fetch_filtered", "tagged_ids", "walk_time_index"]


def _in_range(score: Any, lo: int | str, hi: int | str) -> bool:
    return score is not None and (lo == "-inf" or score >= lo) and (hi == "+inf" or score <= hi)


async def tagged_ids(
    scope: Scope, all_of: Sequence[str], any_of: Sequence[str], lo: int | str, hi: int | str,
    newest_first: bool,
) -> list[str]:
    """Ids carrying every tag of ``all_of`` and one of ``any_of`` (either may be empty, not
    both), created in [lo, hi], in time order."""
    client = scope.bb.client
    candidates: set[bytes] = set()
    if all_of:
        candidates = set(await client.sinter([scope.keys.tag_set(t) for t in all_of]))
    if any_of:
        union = set(await client.sunion([scope.keys.tag_set(t) for t in any_of]))
        candidates = candidates & union if all_of else union
    ordered = sorted(candidates)
    if not ordered:
        return []
    scores = await client.zmscore(scope.keys.ix, ordered)
    pairs = [(s, i) for i, s in zip(ordered, scores, strict=True) if _in_range(s, lo, hi)]
    pairs.sort(reverse=newest_first)
    return [i.decode() for _, i in pairs]


async def walk_time_index(
    scope: Scope, none_of: set[str], lo: int | str, hi: int | str, limit: int | None,
    newest_first: bool,
) -> list[Entry]:
    """No positive tag filter: walk the time index in pages."""
    client = scope.bb.client
    out: list[Entry] = []
    offset, page = 0, max(32, min(1000, (limit or 1000) * 2))
    while limit is None or len(out) < limit:
        if newest_first:
            ids = await client.zrevrangebyscore(scope.keys.ix, hi, lo, start=offset, num=page)
        else:
            ids = await client.zrangebyscore(scope.keys.ix, lo, hi, start=offset, num=page)
        if not ids:
            break
        offset += len(ids)
        need = None if limit is None else limit - len(out)
        out += await fetch_filtered(scope, [i.decode() for i in ids], none_of, need)
        if len(ids) < page:
            break
    return out


async def fetch_filtered(
    scope: Scope, ids: list[str], none_of: set[str], limit: int | None
) -> list[Entry]:
    out: list[Entry] = []
    i = 0
    while i < len(ids):
        # pages of 256, or of what the limit still needs: the newest 20 of a long list
        # are 20 reads, not 256
        step = 256 if limit is None else min(256, max(8, limit - len(out)))
        for e in await scope.get_many(ids[i : i + step]):
            if e is None or (none_of and e.tags & none_of):
                continue
            out.append(e)
            if limit is not None and len(out) >= limit:
                return out
        i += step
    return out
