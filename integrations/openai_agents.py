"""OpenAI Agents SDK: a ``Session`` that keeps an agent's conversation history in memory.

``BlackboardSession(session_id, mem)`` implements the SDK's session protocol
(``agents.memory.Session``: ``get_items``, ``add_items``, ``pop_item``, ``clear_session``,
``session_id``, ``session_settings``) on the conversation API: each item the ``Runner``
adds becomes one conversation message of ``mem`` (:meth:`memory.AgentMemory.add_messages`,
session ``session_id``, the level given, episodic by default), so recall and the dataflow
see the conversation like any other. A message's ``speaker`` is the item's role (or its
type: ``function_call``...), its ``text`` the words recall indexes (the content's text
parts, a tool call's name and arguments, a tool's output), and its metadata holds the item
itself as JSON text under :data:`ITEM_FIELD`: ``get_items`` returns that, so every item
(tool calls, their outputs, reasoning, any structured item) comes back exactly as added.

Order is the store's (creation time, then id; a batch keeps its order). Consistency:

- ``add_items`` is one atomic batch (:meth:`blackboard.Scope.write_many`): all items or
  none; every item is checked before anything is sent.
- ``pop_item`` deletes the newest item; the delete tells whether it removed it, so two
  concurrent pops never return the same item (the loser looks again).
- ``clear_session`` deletes every item the session holds, read once, in one transaction
  (:meth:`blackboard.Scope.delete_many`): never a part of the history, and an ``add_items``
  running meanwhile lands whole before the clear (deleted) or after it (kept).

What "clear" forgets: the session's items, i.e. its messages. What the workers already
derived from them (stm copies, summaries, episodes, facts, team memory) stays: that is the
agent's knowledge, kept as ``SQLiteSession.clear_session`` keeps whatever a model learned,
with provenance naming the deleted messages; forget it with :meth:`AgentMemory.forget`.
Items the workers had not taken in yet are not consolidated afterwards (the dataflow skips
deleted entries).

Needs ``pip install 'reactive-blackboard[openai-agents]'``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

try:
    from agents.items import TResponseInputItem
    from agents.memory.session_settings import (
        SessionSettings,
        coerce_session_settings,
        resolve_session_limit,
    )
except ImportError as exc:  # pragma: no cover - tested by simulating the missing module
    raise ImportError(
        "integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'reactive-blackboard[openai-agents]'"
    ) from exc

from blackboard import BlackboardError, Entry, InvalidArgument
from memory import AgentMemory, MemoryLevel, Message
from memory.conversation import session_tag

__all__ = ["ITEM_FIELD", "BlackboardSession"]

#: The message metadata field holding the SDK item, as JSON text (exact round trip).
ITEM_FIELD = "openai_agents_item"

#: The indexed text of one item is cut here: recall wants its words, not a megabyte of tool
#: output, and the item's JSON (kept whole) and its text share the entry's size limit.
MAX_TEXT_CHARS = 10_000

#: How many times in a row ``pop_item`` may find its newest item taken by another pop or a
#: clear before it gives up (each lost race is another caller's progress).
MAX_POP_RACES = 256


def _check_limit(limit: object) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidArgument(f"limit must be a non-negative int or None, got {limit!r:.40}")
    return limit


def _parts_text(parts: Sequence[Any]) -> str:
    """The words of a content list: text, refusal and transcript parts."""
    out = []
    for p in parts:
        if isinstance(p, Mapping):
            out += [v for k in ("text", "refusal", "transcript") if isinstance(v := p.get(k), str)]
    return "\n".join(s for s in out if s)


def _item_text(item: Mapping[str, Any]) -> str:
    """What recall indexes of an item: its words, a tool call as ``name(arguments)``."""
    for field in ("content", "output"):
        v = item.get(field)
        if isinstance(v, str):
            return v
        if isinstance(v, list) and (t := _parts_text(v)):
            return t
    if isinstance(item.get("name"), str):
        return f"{item['name']}({item.get('arguments') or ''})"
    summary = item.get("summary")
    return _parts_text(summary) if isinstance(summary, list) else ""


def _item_json(i: int, item: object) -> tuple[str, str]:
    """(speaker, JSON text) of item ``i``; InvalidArgument naming what is wrong with it."""
    if not isinstance(item, Mapping):
        raise InvalidArgument(f"add_items: item {i} is a {type(item).__name__}, not a dict")
    speaker = item.get("role") if isinstance(item.get("role"), str) else item.get("type")
    if not isinstance(speaker, str) or not speaker.strip():
        raise InvalidArgument(f"add_items: item {i} has neither a 'role' nor a 'type'")
    try:
        text = json.dumps(item, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        text.encode("utf-8")
        same = json.loads(text) == item
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidArgument(f"add_items: item {i} is not JSON: {exc}") from None
    if not same:  # int keys, tuples...: JSON would hand back something else
        raise InvalidArgument(f"add_items: item {i} does not survive JSON unchanged "
                              "(non-str keys or tuples?)")
    return speaker, text


def _decoded(entry: Entry) -> TResponseInputItem | None:
    """The item an entry stores; None for a message this adapter did not write."""
    raw = (entry.metadata or {}).get(ITEM_FIELD)
    if not isinstance(raw, str):
        return None
    try:
        item = json.loads(raw)
    except ValueError:
        return None
    return item if isinstance(item, dict) else None  # type: ignore[return-value]


class BlackboardSession:
    """An ``agents`` session whose history is conversation ``session_id`` of ``memory``.

    ``level`` / ``team``: where the messages go (:meth:`AgentMemory.scope_for`); a level
    with a capacity or a TTL (working memory keeps 200 entries) drops history with it, a
    decaying level after months unreinforced. ``session_id`` must be usable as a tag
    (no whitespace nor ``{}*?[]\\``). ``session_settings.limit`` is the default of
    ``get_items``. Use one per session; any number may share one ``AgentMemory``.
    """

    def __init__(
        self, session_id: str, memory: AgentMemory, *,
        level: MemoryLevel | str | None = MemoryLevel.EPISODIC, team: str | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(memory, AgentMemory):
            raise InvalidArgument(f"memory must be an AgentMemory, not {type(memory).__name__}")
        try:
            self._tag = session_tag(session_id)
        except BlackboardError as exc:
            raise InvalidArgument(f"invalid session id {session_id!r:.80}: {exc}") from None
        self.session_id = session_id
        self.memory = memory
        self.level, self.team = level, team
        self.scope_id = memory.access.check_write(memory.scope_for(level, team))
        if session_settings is None:
            session_settings = SessionSettings()
        elif not isinstance(session_settings, SessionSettings):
            session_settings = coerce_session_settings(dict(session_settings))
        self.session_settings: SessionSettings | None = session_settings
        _check_limit(session_settings.limit)

    def __repr__(self) -> str:
        return f"BlackboardSession({self.session_id!r}, scope={self.scope_id!r})"

    async def _newest(self, n: int | None) -> list[tuple[Entry, TResponseInputItem]]:
        """This session's newest ``n`` items (None: all), newest first, with their entries.
        Messages of the session written otherwise are skipped, so the window grows until
        it holds ``n`` items or the session ends."""
        scope = self.memory.bb.scope(self.scope_id)
        window = n
        while True:
            got = await scope.entries(all_of={self._tag}, limit=window, newest_first=True)
            ours = [(e, it) for e in got if (it := _decoded(e)) is not None]
            if n is None or window is None or len(ours) >= n or len(got) < window:
                return ours[:n]
            window *= 2

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history, oldest first: every item, or the newest ``limit`` (default:
        ``session_settings.limit``). InvalidArgument for a negative or non-int limit."""
        n = _check_limit(resolve_session_limit(_check_limit(limit), self.session_settings))
        if n == 0:
            return []
        return [item for _e, item in reversed(await self._newest(n))]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` in order, as one atomic batch; every item is checked first
        (a dict with a ``role`` or a ``type``, plain JSON), so a bad one writes nothing."""
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Sequence):
            raise InvalidArgument(f"add_items takes a list of items, not {type(items).__name__}")
        now = datetime.now(UTC)
        msgs = []
        for i, item in enumerate(items):
            speaker, text = _item_json(i, item)
            words = _item_text(item)[:MAX_TEXT_CHARS]
            msgs.append(Message(speaker, words, now, {ITEM_FIELD: text}))
        if msgs:
            await self.memory.add_messages(self.session_id, msgs, self.level, team=self.team)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item (None: the session is empty). Concurrent pops
        each get a different item: a pop whose delete finds the item gone looks again."""
        scope = self.memory.bb.scope(self.scope_id)
        for _ in range(MAX_POP_RACES):
            newest = await self._newest(1)
            if not newest:
                return None
            entry, item = newest[0]
            if await scope.delete(entry.id):
                return item
        raise BlackboardError(f"pop_item on session {self.session_id!r} lost {MAX_POP_RACES} "
                              "races in a row to concurrent pops or clears; retry")

    async def clear_session(self) -> None:
        """Delete every item of the session in one transaction (see the module's notes on
        what consolidation derived from them: it stays)."""
        scope = self.memory.bb.scope(self.scope_id)
        ids = [e.id for e, _item in await self._newest(None)]
        if ids:
            await scope.delete_many(ids)
