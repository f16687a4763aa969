"""``AgentMemory``: the capability an agent holds over its memory (its own scopes, its
teams' scopes, and read access to ``collective``)."""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from blackboard import (
    AccessDenied,
    Blackboard,
    Entry,
    EventType,
    InvalidArgument,
    NotFound,
    deterministic_id,
)
from retrieval.structured import StructuredRetriever
from retrieval.toc_tree import TocTree

from . import feedback, toc, utility
from .access import AccessPolicy
from .conversation import ConversationConfig, Message, Sessions, message_requests
from .hierarchy import Hierarchy, install_default_hierarchy
from .levels import MemoryLevel
from .memory_map import MemoryMap, build_memory_map
from .naming import agent_scope, agent_scopes, team_scope
from .observers import ChangeHandle, Handler
from .producers import Producers
from .recall import Recall, Retriever
from .registry import Registry
from .stats import ScopeStats
from .subscriptions import TagMatch, pattern_matches
from .transfer import TransferReport, transfer

__all__ = ["AgentMemory", "Retriever"]

log = logging.getLogger(__name__)


class AgentMemory(Recall):
    """Memory of agent ``agent_id`` (member of ``teams``) on ``bb``.

    Every method checks access first (:mod:`memory.access`). Close with :meth:`aclose`
    (or ``async with``): it stops observers, flushes producer writes, closes the registry.
    ``producers`` (:class:`~memory.producers.Producers`) serve ``observe``/``flush``."""

    def __init__(self, bb: Blackboard, agent_id: str, teams: Iterable[str] = (), *,
                 retriever: Retriever | None = None, registry: Registry | None = None,
                 default_retriever: bool = True) -> None:
        agent_scope(agent_id, MemoryLevel.WORKING)  # validates the id
        self.bb = bb
        self.agent_id = agent_id
        self.teams = tuple(sorted(set(teams)))
        for t in self.teams:
            team_scope(t)
        self.access = AccessPolicy(agent_id, frozenset(self.teams))
        #: scope_for's answers: store asks for one on every call.
        self._scope_names: dict[tuple[MemoryLevel | str | None, str | None], str] = {}
        self.retriever = retriever
        # No retriever given: the retrieval layer's default one, made on the first ranked
        # recall (it loads an embedder and indexes the readable scopes) and closed with us.
        self._default_retriever = default_retriever and retriever is None
        self._owns_retriever = False
        self._newest = StructuredRetriever(bb)  # order="newest": straight from the indexes
        self.producers = Producers(self, self._twin)
        #: Decorator recording each call of a sync or async callable through :meth:`store`
        #: (``@mem.observe`` or ``@mem.observe(level=..., tags=...)``; see
        #: :meth:`memory.producers.Producers.observe`).
        self.observe = self.producers.observe
        self._owns_bb = False  # a twin (see _twin) closes its own connection
        self._registry = registry
        self._owns_registry = registry is None
        self._ensured: set[str] = set()
        self._handles: list[ChangeHandle] = []
        self._sessions = Sessions()

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            self._registry = Registry(self.bb)
        return self._registry

    async def aclose(self) -> None:
        for h in self._handles:
            await h.stop()
        self._handles.clear()
        await self.producers.aclose()
        if self._registry is not None and self._owns_registry:
            await self._registry.aclose()
            self._registry = None
        if self._owns_retriever and self.retriever is not None:
            own, self.retriever = self.retriever, None
            self._owns_retriever = False
            await own.aclose()
        if self._owns_bb:
            await self.bb.close()

    async def __aenter__(self) -> AgentMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- scopes ---------------------------------------------------------------------------

    def scope_for(self, level: MemoryLevel | str | None = MemoryLevel.WORKING,
                  team: str | None = None) -> str:
        """The scope of ``level`` (the agent's, or team ``team``'s; a team with level None
        is its root scope ``team:<t>``)."""
        sid = self._scope_names.get((level, team))
        if sid is not None:
            return sid
        if team is not None:
            sid = team_scope(team, level)
        elif level is None:
            raise InvalidArgument("an agent scope needs a level")
        else:
            sid = agent_scope(self.agent_id, level)
        if team is None or team in self.teams:  # bounded: levels x (own teams + self)
            self._scope_names[(level, team)] = sid
        return sid

    def writable_scopes(self) -> list[str]:
        return list(self.access.writable_names)

    def readable_scopes(self) -> list[str]:
        return self.access.known_readable()

    async def _ensure(self, scope_id: str) -> None:
        """Register the scope with its level default once, so its policy is enforced."""
        if scope_id not in self._ensured:
            try:
                await self.registry.ensure_scope(scope_id)
            except AccessDenied:
                # A confined agent user may not write the registry or cfg hashes: its
                # scopes are provisioned by `blackboard acl grant` (memory.access.
                # provision_agent); an unprovisioned one runs on the scripts' defaults.
                log.warning("scope %s is not registered and this Redis user may not "
                            "register it; its level defaults are not enforced", scope_id)
            self._ensured.add(scope_id)

    async def install_default_hierarchy(
        self, overrides: Mapping[MemoryLevel, Mapping[str, Any]] | None = None
    ) -> Hierarchy:
        """Register this agent's scopes and default edges (see :mod:`memory.hierarchy`)."""
        h = await install_default_hierarchy(self.bb, self.agent_id, self.teams,
                                            overrides=overrides, registry=self.registry)
        self._ensured.update(c.scope_id for c in h.scopes)
        return h

    # -- entries --------------------------------------------------------------------------

    async def store(
        self, data: Any, level: MemoryLevel | str | None = MemoryLevel.WORKING, *,
        tags: Iterable[str] | None = None, metadata: Mapping[str, Any] | None = None,
        importance: float = 0.5, key: str | None = None, ttl: float | None = None,
        team: str | None = None, source: Sequence[str] = (),
    ) -> Entry:
        """Write ``data`` to the level's scope (or team ``team``'s scope of that level;
        ``level=None`` with a team is the team root). ``ttl`` seconds (None: the scope's)."""
        sid = self.access.check_write(self.scope_for(level, team))
        await self._ensure(sid)
        return await self.bb.scope(sid).write(
            data, tags=tags, metadata=metadata, key=key, ttl=ttl, importance=importance,
            source=source, author=self.agent_id,
        )

    async def add_messages(
        self, session: str, messages: Sequence[Message],
        level: MemoryLevel | str | None = MemoryLevel.EPISODIC, *, team: str | None = None,
    ) -> list[Entry]:
        """Store a conversation's ``messages`` in order, one entry each (one round trip per
        batch); positions continue the session's. Each entry is indexed with its
        neighbouring turns as the scope's :class:`ConversationConfig` says; its
        ``metadata`` is the message's, as given (see :mod:`memory.conversation`)."""
        sid = self.access.check_write(self.scope_for(level, team))
        start = await self._sessions.start(self.bb, sid, session)
        reqs = [replace(r, author=self.agent_id) for r in message_requests(
            session, list(messages), start, self._sessions.config(sid))]
        if not reqs:
            return []
        await self._ensure(sid)
        out = await self.bb.scope(sid).write_many(reqs)
        self._sessions.advance(sid, session, start + len(out))
        return out

    def configure_conversation(
        self, config: ConversationConfig,
        level: MemoryLevel | str | None = MemoryLevel.EPISODIC, *, team: str | None = None,
    ) -> None:
        """How messages written to this level's scope (or the team's) are indexed."""
        self._sessions.configs[self.access.check_write(self.scope_for(level, team))] = config

    async def locate(self, entry_id: str, scope: str | None = None) -> str:
        """The writable scope holding ``entry_id`` (checked if given); NotFound otherwise.

        Only the agent's writable scopes are searched (one pipelined EXISTS each), so an
        id in another agent's scope is simply not found.
        """
        if scope is not None:
            self.access.check_write(scope)
            candidates = [scope]
        else:
            candidates = self.writable_scopes()
        found = await self.bb.reads.holding(entry_id, candidates)
        for s, hit in zip(candidates, found, strict=True):
            if hit:
                return s
        raise NotFound(f"no entry {entry_id!r} in the scopes agent {self.agent_id!r} may write")

    async def forget(self, entry_id: str, *, scope: str | None = None) -> bool:
        """Delete an entry of a writable scope; NotFound if there is none."""
        sid = await self.locate(entry_id, scope)
        return await self.bb.scope(sid).delete(entry_id)

    async def reinforce(self, entry_id: str, *, scope: str | None = None, boost: float = 0.2,
                        max_strength: float = 1.0) -> tuple[float, int]:
        """Boost an entry's strength (capped) and record this agent among its reinforcers;
        -> (strength, reinforcement count)."""
        sid = await self.locate(entry_id, scope)
        return await self.bb.scope(sid).reinforce(entry_id, by=self.agent_id, boost=boost,
                                                  max_strength=max_strength)

    async def confirm(self, belief_id: str, *, scope: str | None = None) -> Entry:
        """Confirm a belief this agent may read (operator-confirmed evidence for its
        claim; see :mod:`memory.feedback`); -> the feedback entry written."""
        return await feedback.confirm(self, belief_id, scope)

    async def correct(self, belief_id: str, claim: str, *, scope: str | None = None) -> Entry:
        """Correct a belief with ``claim`` (the new value, or a sentence of the belief's
        subject and predicate): contradicting evidence that supersedes the belief when it
        wins (:mod:`memory.feedback`); -> the feedback entry written."""
        return await feedback.correct(self, belief_id, claim, scope)

    async def feedback(self, entry_ids: Sequence[str] | str, helpful: bool
                       ) -> utility.FeedbackResult:
        """Say whether recalled entries helped: per-agent use counts ranking can use (the
        ``useful`` lens), reinforcement when helpful, contradicting evidence against a
        misleading belief (:mod:`memory.utility`)."""
        return await utility.feedback(self, entry_ids, helpful)

    async def transfer(self, entry_id: str, to_level: MemoryLevel | str, *,
                       team: str | None = None) -> Entry:
        """Move an entry into another level's scope: copy with provenance under a
        deterministic id, then delete the original. Safe to retry (also after a crash
        between the two steps)."""
        target = self.access.check_write(self.scope_for(to_level, team))
        try:
            sid = await self.locate(entry_id)
        except NotFound:
            for s in self.writable_scopes():  # already moved: find the copy
                new_id = deterministic_id("transfer", s, target, entry_id)
                try:
                    return await self.bb.scope(target).get(new_id)
                except NotFound:
                    continue
            raise
        if sid == target:
            return await self.bb.scope(sid).get(entry_id)
        e = await self.bb.scope(sid).get(entry_id)
        await self._ensure(target)
        meta = {**e.metadata, "transferred_from": sid, "original_id": e.id}
        if e.key:
            meta["original_key"] = e.key
        copy = await self.bb.scope(target).write(
            e.value, tags=e.tags, metadata=meta, importance=e.importance,
            source=(*e.source, e.id), entry_id=deterministic_id("transfer", sid, target, e.id),
            author=self.agent_id,
        )
        await self.bb.scope(sid).delete(entry_id)
        return copy

    async def transfer_to(self, successor: str,
                          levels: Sequence[MemoryLevel | str] | None = None) -> TransferReport:
        """Give ``successor`` this agent's long-term memory (episodic, semantic, procedural
        unless ``levels`` says), each copy with provenance to its original; idempotent.
        Needs a connection that may write the successor's scopes (the service user): see
        :mod:`memory.transfer`."""
        return await transfer(self, successor, levels)

    # -- introspection --------------------------------------------------------------------

    async def list_tags(self, level: MemoryLevel | str | None = None, *,
                        team: str | None = None) -> dict[str, int]:
        """``{tag: count}`` of one scope (the level's, or the team's), from the counter
        hash; with neither level nor team, summed over the agent's own scopes. O(tags)."""
        if level is None and team is None:
            sids = agent_scopes(self.agent_id)
        else:
            sids = [self.access.check_read(self.scope_for(level, team))]
        out: dict[str, int] = {}
        for s in sids:
            for t, n in (await self.bb.scope(s).tags()).items():
                out[t] = out.get(t, 0) + n
        return dict(sorted(out.items()))

    async def stats(self) -> dict[str, ScopeStats]:
        """Statistics of every readable scope (see :mod:`memory.stats`); O(scopes + tags)."""
        sids = self.readable_scopes()
        return {s.scope: s for s in await self.bb.reads.stats(sids)}

    async def memory_map(self) -> MemoryMap:
        return await build_memory_map(self.bb, self.registry, self.access,
                                      self.readable_scopes())

    async def timeline(self, level: str | None = None, at: str | None = None, depth: int = 1,
                       *, scope: str | None = None) -> TocTree:
        """A node of the agent's table of contents and ``depth`` levels of its children
        (:func:`memory.toc.timeline`): ``timeline(at="2023-05")`` is May 2023."""
        return await toc.timeline(self, level, at, depth, scope)

    async def expand(self, segment: str, *, scope: str | None = None) -> list[Entry]:
        """The raw entries under a segment of the table of contents (its ``ref``)."""
        return await toc.expand(self, segment, scope)

    # -- producers ------------------------------------------------------------------------

    async def flush(self) -> None:
        """Wait for producer writes scheduled from sync callables."""
        await self.producers.flush()

    @property
    def producer_errors(self) -> int:
        """Producer writes that failed (logged, never raised)."""
        return self.producers.errors

    async def _twin(self) -> AgentMemory:
        """This memory over a new connection of its own (closed with it), for producers
        running on another event loop."""
        twin = AgentMemory(await self.bb.reconnect(), self.agent_id, self.teams,
                           default_retriever=False)
        twin._owns_bb = True
        return twin

    # -- observers ------------------------------------------------------------------------

    def on_change(self, scope_pattern: str, handler: Handler, *,
                  tags: Iterable[str] | TagMatch | None = None,
                  types: Collection[EventType] | None = None, since: str | None = None,
                  block_ms: int = 1000) -> ChangeHandle:
        """Run ``handler(event)`` (sync or async) for each new event of the readable
        scopes matching ``scope_pattern`` (``*`` within segments). ``tags``: events must
        carry all of them (or pass the :class:`TagMatch`). Scopes are resolved now;
        AccessDenied if the pattern matches no readable scope. Needs a running loop."""
        match = tags if isinstance(tags, TagMatch) else TagMatch.of(all_of=tags or ())
        scopes = [s for s in self.readable_scopes() if pattern_matches(scope_pattern, s)]
        if not scopes:
            self.access.check_read(scope_pattern)  # names the pattern in AccessDenied
            raise NotFound(f"no scope of agent {self.agent_id!r} matches {scope_pattern!r}")
        h = ChangeHandle(self.bb, scopes, handler, match=match, types=types, since=since,
                         block_ms=block_ms)
        self._handles.append(h)
        return h
