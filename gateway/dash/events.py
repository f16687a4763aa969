"""The events view's history: the newest events of every scope the caller may read, as
``blackboard tail`` shows a scope's (each with its entry's text while the entry lives),
and the texts of entries the live stream names (SSE events carry ids, not values)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from blackboard import AccessDenied, Entry, Event
from blackboard.entry import TEXT_KEYS
from memory.response_bodies import EventOut

from ..caller import Caller
from .scopes import check_read, visible_scopes

__all__ = ["TEXT_CHARS", "readable", "recent_events", "texts_of"]

#: An event's text is cut here: the page shows one line of it.
TEXT_CHARS = 300


def readable(e: Entry) -> str:
    """What a row says of ``e``: its text field, or for a value of steps (an episode, a
    procedure) its task and steps, rather than the JSON ``Entry.text`` falls back to."""
    v = e.value
    if isinstance(v, dict) and isinstance(v.get("steps"), list) and not any(
            isinstance(v.get(k), str) for k in TEXT_KEYS):
        what = next((str(v[k]) for k in ("title", "name", "task", "task_kind") if v.get(k)),
                    "steps")
        return f"{what}: " + " → ".join(str(x) for x in v["steps"])
    return e.text


async def _texts(caller: Caller, scope: str, ids: Sequence[str]) -> dict[str, str]:
    """Entry id -> text of the live entries of ``scope`` among ``ids`` (one round trip)."""
    want = sorted(set(ids))
    got = await caller.bb.scope(scope).get_many(want)
    return {i: readable(e)[:TEXT_CHARS] for i, e in zip(want, got, strict=True) if e is not None}


async def _newest(caller: Caller, scope: str, limit: int) -> list[Event]:
    try:
        return await caller.bb.scope(scope).newest_events(limit)
    except AccessDenied:  # a scope Redis refuses this user (a registry ahead of its ACL)
        return []


async def recent_events(caller: Caller, limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` events over the caller's scopes, newest first, each with the
    text of its entry (None once the entry is deleted or expired)."""
    scopes = await visible_scopes(caller)
    feeds = await asyncio.gather(*(_newest(caller, s, limit) for s in scopes))
    evs = sorted((ev for f in feeds for ev in f), key=lambda e: (e.at, e.id), reverse=True)[:limit]
    by_scope: dict[str, list[str]] = {}
    for ev in evs:
        by_scope.setdefault(ev.scope, []).append(ev.entry_id)
    texts = dict(zip(by_scope, await asyncio.gather(
        *(_texts(caller, s, ids) for s, ids in by_scope.items())), strict=True))
    return [EventOut.of(ev).model_dump() | {"text": texts[ev.scope].get(ev.entry_id)}
            for ev in evs]


async def texts_of(caller: Caller, refs: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """``[{scope, id, text}]`` for each (scope, entry id) asked whose entry lives; every
    scope is checked readable first (AccessDenied names the first that is not)."""
    by_scope: dict[str, list[str]] = {}
    for scope, entry_id in refs:
        by_scope.setdefault(check_read(caller, scope), []).append(entry_id)
    got = await asyncio.gather(*(_texts(caller, s, ids) for s, ids in by_scope.items()))
    return [{"scope": s, "id": i, "text": t}
            for s, texts in zip(by_scope, got, strict=True) for i, t in texts.items()]
