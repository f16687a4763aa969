"""Listing a scope's entries by tags and time, from its indexes (never a scan)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .entry import Entry
from .errors import InvalidArgument
from .validation import validate_tags

if TYPE_CHECKING:
    from .scope import Scope

__all__ = ["list_entries"]


async def list_entries(
    scope: Scope,
    *,
    all_of: Iterable[str] | None = None,
    any_of: Iterable[str] | None = None,
    none_of: Iterable[str] | None = None,
    start_ms: int | None = None,
    end_ms: int | None = None,
    limit: int | None = 100,
    newest_first: bool = True,
) -> list[Entry]:
    """Live entries of ``scope`` matching the tag filter and time range (created_at, ms,
    inclusive); :meth:`Scope.entries` is this function. Tag sets narrow the candidates on
    the server (SINTER/SUNION), the time order comes from the ``ix`` zset, ``none_of`` is
    applied to the fetched entries; ``limit=None`` returns every match."""
    a, o, n = validate_tags(all_of), validate_tags(any_of), set(validate_tags(none_of))
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidArgument(f"limit must be a non-negative int or None, got {limit!r}")
    if set(a) & n:
        return []
    lo = "-inf" if start_ms is None else int(start_ms)
    hi = "+inf" if end_ms is None else int(end_ms)
    client = scope.bb.client
    if a or o:
        candidates: set[bytes] = set()
        if a:
            candidates = set(await client.sinter([scope.keys.tag_set(t) for t in a]))
        if o:
            union = set(await client.sunion([scope.keys.tag_set(t) for t in o]))
            candidates = candidates & union if a else union
        ordered = sorted(candidates)
        if not ordered:
            return []
        scores = await client.zmscore(scope.keys.ix, ordered)
        pairs = [
            (s, i)
            for i, s in zip(ordered, scores, strict=True)
            if s is not None and (lo == "-inf" or s >= lo) and (hi == "+inf" or s <= hi)
        ]
        pairs.sort(reverse=newest_first)
        return await _fetch_filtered(scope, [i.decode() for _, i in pairs], n, limit)
    # No positive tag filter: walk the time index in pages.
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
        out += await _fetch_filtered(scope, [i.decode() for i in ids], n, need)
        if len(ids) < page:
            break
    return out


async def _fetch_filtered(
    scope: Scope, ids: list[str], none_of: set[str], limit: int | None
) -> list[Entry]:
    out: list[Entry] = []
    step = 256
    for i in range(0, len(ids), step):
        for e in await scope.get_many(ids[i : i + step]):
            if e is None or (none_of and e.tags & none_of):
                continue
            out.append(e)
            if limit is not None and len(out) >= limit:
                return out
    return out
