"""One scope's entries a page at a time, newest first, optionally filtered by text.

A page ends at a cursor, ``<created_at ms>:<entry id>`` of the last entry it looked at;
the next page starts strictly after it in the scope's time order (created_at, then id,
both descending: the order of the scope's time index). Entries written meanwhile do not
shift the pages already seen. With a text filter (case-insensitive, on the entry's text,
tags and key) a page looks at no more than :data:`SCAN` entries: if that many passed
without filling the page, it returns what matched and the cursor where it stopped, so a
rare word in a huge scope costs bounded requests, never one unbounded one.
"""

from __future__ import annotations

import re
from typing import Any

from blackboard import Entry
from memory.response_bodies import EntryOut

from ..caller import Caller
from ..refusals import InvalidParameter
from .scopes import check_read

__all__ = ["SCAN", "decode_cursor", "encode_cursor", "page"]

#: Entries a filtered page looks at, at most.
SCAN = 2000
#: Entries read from Redis per step of a filtered page.
STEP = 200

_CURSOR = re.compile(r"^(\d{1,15}):([A-Za-z0-9._~-]{1,128})$")


def encode_cursor(e: Entry) -> str:
    return f"{e.created_at}:{e.id}"


def decode_cursor(raw: str) -> tuple[int, str]:
    m = _CURSOR.match(raw)
    if m is None:
        raise InvalidParameter("cursor must be the `next` value of the previous page "
                               "(<created_at ms>:<entry id>); omit it for the first page",
                               field="cursor")
    return int(m.group(1)), m.group(2)


async def _older(caller: Caller, scope: str, at: tuple[int, str] | None,
                 n: int) -> list[Entry]:
    """Up to ``n`` entries strictly after ``at`` in newest-first order (None: from the
    newest). Entries sharing ``at``'s millisecond are ordered by id, as the index is."""
    sc = caller.bb.scope(scope)
    if at is None:
        return await sc.entries(limit=n)
    ms, eid = at
    same = await sc.entries(start_ms=ms, end_ms=ms, limit=None)
    ties = sorted((e for e in same if e.id < eid), key=lambda e: e.id, reverse=True)
    if len(ties) >= n or ms <= 0:
        return ties[:n]
    return ties + await sc.entries(end_ms=ms - 1, limit=n - len(ties))


def _matches(e: Entry, needle: str) -> bool:
    return (needle in e.text.casefold() or any(needle in t.casefold() for t in e.tags)
            or (e.key is not None and needle in e.key.casefold()))


async def page(caller: Caller, scope: str, limit: int, cursor: str | None,
               text: str | None) -> dict[str, Any]:
    """``{scope, entries, next, scanned}``: ``next`` is None when the scope has no more."""
    check_read(caller, scope)
    at = decode_cursor(cursor) if cursor else None
    needle = (text or "").strip().casefold()
    if not needle:
        got = await _older(caller, scope, at, limit + 1)
        shown = got[:limit]
        nxt = encode_cursor(shown[-1]) if len(got) > limit else None
        return {"scope": scope, "entries": [EntryOut.of(e).model_dump() for e in shown],
                "next": nxt, "scanned": len(shown), "filter": None}
    out: list[Entry] = []
    scanned = 0
    last: Entry | None = None
    more = True
    while len(out) < limit and scanned < SCAN:
        got = await _older(caller, scope, at, min(STEP, SCAN - scanned))
        if not got:
            more = False
            break
        for e in got:
            scanned += 1
            last = e
            if _matches(e, needle):
                out.append(e)
                if len(out) >= limit:
                    break
        at = (last.created_at, last.id) if last else at
    nxt = encode_cursor(last) if more and last is not None else None
    return {"scope": scope, "entries": [EntryOut.of(e).model_dump() for e in out],
            "next": nxt, "scanned": scanned, "filter": text}
