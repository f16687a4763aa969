"""``RemoteMemory(url, token)``: an agent's memory through a gateway, shaped like
:class:`~memory.agent.AgentMemory`, so code written against one runs against the other by
changing the constructor::

    async with RemoteMemory("http://gateway:8080", token) as mem:
        await mem.store("Acme uses net-30 terms", tags={"fact"})
        for h in await mem.recall("payment terms"):
            print(h.explain())

Needs only httpx (and pydantic, for :mod:`memory.request_bodies` and
:mod:`memory.response_bodies`): results are the library's own types
(:class:`~blackboard.Entry`, :class:`~retrieval.scoring.ScoredEntry`,
:class:`~memory.MemoryMap`...), and every failure the gateway answers is raised as the
library exception it names (:class:`~blackboard.AccessDenied`, :class:`~blackboard.NotFound`,
:class:`~blackboard.VersionConflict`...) with the server's detail. :meth:`RemoteMemory.sync`
gives the blocking twin (:mod:`memory.remote_sync`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

try:
    import httpx
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        "memory.remote needs httpx: pip install 'reactive-blackboard[gateway]' "
        "(or pip install httpx)"
    ) from exc

from blackboard import Entry, EventType
from retrieval.completeness import RecallHits
from retrieval.goal import RetrievalContext, with_context
from retrieval.query import MemoryQuery
from retrieval.toc_tree import TocTree

from .aliases import deprecated_keyword
from .context import Context
from .levels import MemoryLevel
from .memory_map import MemoryMap
from .remote_decode import map_of, raise_for, stats_of
from .remote_events import RemoteChangeHandle, RemoteHandler
from .request_bodies import MessageIn
from .response_bodies import BatchOut, EntryOut, MapOut, RecallResponse, StatsOut, TagsOut
from .stats import ScopeStats
from .subscriptions import TagMatch
from .utility import FeedbackResult, check_ids, feedback_result

if TYPE_CHECKING:
    from .conversation import Message
    from .remote_sync import SyncRemoteMemory

__all__ = ["RemoteMemory"]


def _level(level: MemoryLevel | str | None) -> str | None:
    return None if level is None else str(level.value if isinstance(level, MemoryLevel)
                                          else level)


class RemoteMemory:
    """The memory of the agent whose ``token`` this is, served by the gateway at ``url``.

    Open it with ``async with`` (or call :meth:`aclose`); one HTTP connection pool is
    shared by every call. ``client``: an ``httpx.AsyncClient`` of your own (its base URL
    and auth header are set here; you close it)."""

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 30.0,
                 client: httpx.AsyncClient | None = None) -> None:
        self.url = url.rstrip("/")
        self.token = token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._owns_client = client is None
        if client is None:
            client = httpx.AsyncClient(timeout=timeout)
        client.base_url = httpx.URL(self.url)
        client.headers.update(headers)
        self._http = client
        self._handles: list[RemoteChangeHandle] = []

    # -- lifecycle ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop the change handlers and close the connection pool (if we made it)."""
        for h in self._handles:
            await h.stop()
        self._handles.clear()
        if self._owns_client:
            await self._http.aclose()

    async def __aenter__(self) -> RemoteMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def sync(self) -> SyncRemoteMemory:
        """A blocking twin of this client (its own loop thread and connection pool)."""
        from .remote_sync import SyncRemoteMemory

        return SyncRemoteMemory(self.url, self.token)

    async def _call(self, method: str, path: str, *, json: Any = None,
                    params: Mapping[str, Any] | None = None) -> Any:
        try:
            r = await self._http.request(method, path, json=json, params=params)
        except httpx.TransportError as exc:
            from blackboard import ServerUnavailable

            raise ServerUnavailable(f"gateway {self.url} unreachable: {exc}") from exc
        if r.status_code >= 400:
            raise_for(r.status_code, r.content, r.headers)
        return r.json() if r.content else None

    # -- entries --------------------------------------------------------------------------

    async def store(
        self, data: Any, level: MemoryLevel | str | None = MemoryLevel.WORKING, *,
        tags: Iterable[str] | None = None, metadata: Mapping[str, Any] | None = None,
        importance: float = 0.5, key: str | None = None, ttl: float | None = None,
        team: str | None = None,
    ) -> Entry:
        """As :meth:`AgentMemory.store`: write ``data`` to the level's scope (or team
        ``team``'s); ``ttl`` seconds (None: the scope's)."""
        body = {"value": data, "level": _level(level), "team": team,
                "tags": sorted(tags or ()), "metadata": dict(metadata or {}), "key": key,
                "ttl": ttl, "importance": importance}
        return EntryOut.model_validate(await self._call("POST", "/v1/memories",
                                                        json=body)).to_entry()

    async def store_many(self, items: Sequence[Mapping[str, Any]]) -> list[Entry]:
        """Several writes in one request: each item holds :meth:`store`'s arguments by
        name (``data`` or ``value``, ``level``, ``tags``...)."""
        body = []
        for it in items:
            d = dict(it)
            if "data" in d:
                d["value"] = d.pop("data")
            if "level" in d:
                d["level"] = _level(d["level"])
            if "tags" in d:
                d["tags"] = sorted(d["tags"] or ())
            body.append(d)
        got = BatchOut.model_validate(await self._call("POST", "/v1/memories/batch",
                                                       json={"items": body}))
        return [e.to_entry() for e in got.entries]

    async def add_messages(
        self, session: str, messages: Sequence[Message],
        level: MemoryLevel | str | None = MemoryLevel.EPISODIC, *, team: str | None = None,
    ) -> list[Entry]:
        """As :meth:`AgentMemory.add_messages`: a conversation's messages, in order."""
        if not messages:
            return []
        msgs = [MessageIn(speaker=m.speaker, text=m.text, at=m.at,
                          metadata=dict(m.metadata) if m.metadata else None).model_dump(
                              mode="json") for m in messages]
        got = BatchOut.model_validate(await self._call(
            "POST", f"/v1/sessions/{session}/messages",
            json={"messages": msgs, "level": _level(level), "team": team}))
        return [e.to_entry() for e in got.entries]

    async def get(self, entry_id: str, *, scope: str | None = None) -> Entry:
        """The live entry ``entry_id`` of a readable scope; NotFound otherwise."""
        params = {"scope": scope} if scope else None
        return EntryOut.model_validate(await self._call(
            "GET", f"/v1/memories/{entry_id}", params=params)).to_entry()

    async def update(self, entry_id: str, *, scope: str | None = None, value: Any = None,
                     tags: Iterable[str] | None = None,
                     metadata: Mapping[str, Any] | None = None,
                     importance: float | None = None,
                     expected_version: int | None = None) -> Entry:
        """Change an entry's value, tags, metadata or importance (None: keep); with
        ``expected_version``, VersionConflict if someone else changed it first."""
        body: dict[str, Any] = {"scope": scope, "value": value,
                                "tags": sorted(tags) if tags is not None else None,
                                "metadata": dict(metadata) if metadata is not None else None,
                                "importance": importance, "expected_version": expected_version}
        return EntryOut.model_validate(await self._call(
            "PATCH", f"/v1/memories/{entry_id}",
            json={k: v for k, v in body.items() if v is not None})).to_entry()

    async def forget(self, entry_id: str, *, scope: str | None = None) -> bool:
        """As :meth:`AgentMemory.forget`: delete an entry of a writable scope; NotFound if
        there is none."""
        params = {"scope": scope} if scope else None
        await self._call("DELETE", f"/v1/memories/{entry_id}", params=params)
        return True

    # -- beliefs: feedback ----------------------------------------------------------------

    async def confirm(self, belief_id: str, *, scope: str | None = None) -> Entry:
        """As :meth:`AgentMemory.confirm`: confirm a belief; -> the feedback entry."""
        got = await self._call("POST", f"/v1/beliefs/{_seg(belief_id)}/confirm",
                               json={"scope": scope})
        return EntryOut.model_validate(got["evidence"]).to_entry()

    async def correct(self, belief_id: str, claim: str, *, scope: str | None = None) -> Entry:
        """As :meth:`AgentMemory.correct`: correct a belief with ``claim``; -> the
        feedback entry."""
        got = await self._call("POST", f"/v1/beliefs/{_seg(belief_id)}/correct",
                               json={"claim": claim, "scope": scope})
        return EntryOut.model_validate(got["evidence"]).to_entry()

    async def feedback(self, entry_ids: Sequence[str] | str,
                       helpful: bool) -> FeedbackResult:
        """As :meth:`AgentMemory.feedback`: whether recalled entries helped."""
        ids = check_ids(entry_ids)  # the gateway checks again; this names the mistake here
        got = await self._call("POST", "/v1/feedback",
                               json={"entry_ids": ids, "helpful": helpful})
        return feedback_result(got)

    # -- recall and introspection ---------------------------------------------------------

    async def recall(self, query: str | MemoryQuery, *, max_results: int | None = None,
                     explain: bool = False, limit: int | None = None,
                     context: RetrievalContext | None = None) -> RecallHits:
        """As :meth:`AgentMemory.recall`: hybrid recall over the readable scopes (a
        :class:`MemoryQuery` narrows it), best first, every score component included."""
        q = query if isinstance(query, MemoryQuery) else MemoryQuery(query=str(query))
        q = with_context(q, context)
        # The lens was applied when the query was built; its fields travel as set.
        body = q.model_dump(mode="json", exclude_defaults=True, exclude={"lens"})
        n = deprecated_keyword(max_results, limit, "limit", "RemoteMemory.recall()")
        if n is not None:
            body["max_results"] = n
        if explain:
            body["explain"] = True
        got = RecallResponse.model_validate(await self._call("POST", "/v1/recall", json=body))
        return got.to_hits()

    async def list_tags(self, level: MemoryLevel | str | None = None, *,
                        team: str | None = None) -> dict[str, int]:
        """As :meth:`AgentMemory.list_tags`: ``{tag: count}`` of one level's scope (or the
        team's); with neither, summed over the agent's own scopes."""
        params = {k: v for k, v in (("level", _level(level)), ("team", team)) if v}
        got = TagsOut.model_validate(await self._call("GET", "/v1/tags", params=params))
        return got.tags

    async def stats(self) -> dict[str, ScopeStats]:
        """As :meth:`AgentMemory.stats`: statistics of every readable scope."""
        return stats_of(StatsOut.model_validate(await self._call("GET", "/v1/stats")))

    async def timeline(self, level: str | None = None, at: str | None = None, depth: int = 1,
                       *, scope: str | None = None) -> TocTree:
        """``GET /v1/timeline``: as :meth:`memory.AgentMemory.timeline`."""
        params: dict[str, Any] = {"depth": depth}
        for k, v in (("level", level), ("at", at), ("scope", scope)):
            if v is not None:
                params[k] = v
        return TocTree.from_dict(await self._call("GET", "/v1/timeline", params=params))

    async def expand(self, segment: str) -> list[Entry]:
        """``GET /v1/timeline/expand``: as :meth:`memory.AgentMemory.expand`."""
        got = await self._call("GET", "/v1/timeline/expand", params={"segment": segment})
        return [EntryOut.model_validate(e).to_entry() for e in got["entries"]]

    async def memory_map(self) -> MemoryMap:
        """As :meth:`AgentMemory.memory_map`."""
        return map_of(MapOut.model_validate(await self._call("GET", "/v1/map")))

    async def context(self, query: str, *, budget_tokens: int = 1500,
                      levels: Sequence[str] | None = None,
                      scopes: Sequence[str] | None = None) -> Context:
        """As :meth:`AgentMemory.context`: prompt-ready text within ``budget_tokens``,
        with the entry behind each citation id."""
        body: dict[str, Any] = {"query": query, "budget_tokens": budget_tokens}
        if levels:
            body["levels"] = list(levels)
        if scopes:
            body["scopes"] = list(scopes)
        got = await self._call("POST", "/v1/context", json=body)
        return Context(got["text"], {k: EntryOut.model_validate(v).to_entry()
                                     for k, v in got["citations"].items()},
                       got["tokens"], got["budget_tokens"], got["left_out"])

    # -- observers ------------------------------------------------------------------------

    def on_change(self, scope_pattern: str, handler: RemoteHandler, *,
                  tags: Iterable[str] | TagMatch | None = None,
                  types: Collection[EventType] | None = None,
                  since: str | None = None) -> RemoteChangeHandle:
        """As :meth:`AgentMemory.on_change`: ``handler(event)`` (sync or async) for each
        new event of the readable scopes matching ``scope_pattern``, read from the
        gateway's event stream (``/v1/events``); a dropped stream is resumed where it
        stopped (``Last-Event-ID``). ``since``: a cursor to start after (``<scope>@<id>``,
        as :attr:`RemoteChangeHandle.cursor` reports). Needs a running loop."""
        match = tags if isinstance(tags, TagMatch) else TagMatch.of(all_of=tags or ())
        h = RemoteChangeHandle(self._http, scope_pattern, handler, match=match, types=types,
                               since=since)
        self._handles.append(h)
        return h


def _seg(v: str) -> str:
    """``v`` as one path segment: a '/', '?' or '#' in an id cannot reach another route."""
    return quote(str(v), safe="")
