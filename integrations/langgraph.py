"""LangGraph long-term memory on the blackboard: :class:`BlackboardStore`, a
``langgraph.store.base.BaseStore``::

    from integrations.langgraph import BlackboardStore

    with BlackboardStore.connect("redis://127.0.0.1:6379/0", "a1", teams=["t1"]) as store:
        store.put(("users", "u1"), "prefs", {"text": "likes short answers"})
        store.get(("users", "u1"), "prefs").value      # {'text': 'likes short answers'}
        store.search(("users",), query="how to answer")  # ranked by our recall
        graph = builder.compile(store=store)           # nodes get it as `store`

Each item is one entry of a scope the store's agent may use; which scope a namespace maps
to (the agent's own, a team's, ``collective``) is in :mod:`integrations.store_paths`.
Every read and write goes through the SDK (``AgentMemory``, its scopes), so an agent's
store reaches only what that agent (and, with a confined Redis user, Redis) allows; a
namespace it may not write raises :class:`blackboard.AccessDenied` naming it, before
anything of the batch is written (puts run one by one: a refusal only Redis makes -- a
quota, an ACL our check was not told of -- stops the batch at that put).

Semantics are those of LangGraph's ``InMemoryStore`` (checked by a parity test): a batch
reads before it writes and its puts on one (namespace, key) collapse to the last; search
without a query lists items by namespace (in the order namespaces got their first item)
and then by creation; ``filter`` takes equality and ``$eq``/``$ne``/``$gt``/
``$gte``/``$lt``/``$lte``; a search with a ``query`` ranks by our hybrid recall (the
``score`` is its fused score), items it has not ranked yet following unscored; ``ttl``
(minutes) expires items through the blackboard's own TTL and a read refreshes it
(``refresh_on_read``). ``index`` of a put is ignored: every item's strings are indexed.
Unlike ``InMemoryStore``, a namespace whose items are all deleted is no longer listed.
The store's parts: :mod:`integrations.langgraph_bridge` (its event loop),
:mod:`integrations.langgraph_namespaces` (which namespaces a scope holds) and
:mod:`integrations.langgraph_items` (entries as LangGraph items).
"""

from __future__ import annotations

from .langgraph_bridge import MISSING_LANGGRAPH, LoopBridge

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
        validate_op_namespace,
    )
except ImportError as _exc:  # pragma: no cover - exercised by simulating the absence
    raise ImportError(MISSING_LANGGRAPH) from _exc

import asyncio
import json
from collections.abc import Iterable, Sequence
from typing import Any

from blackboard import Entry, InvalidArgument, NotFound
from memory import AgentMemory, MemoryLevel, MemoryQuery, TagFilter
from memory.sync import SyncMemory

from . import store_paths as paths
from .langgraph_items import item, search_item
from .langgraph_namespaces import NamespaceIndex

__all__ = ["BlackboardStore"]

_ItemId = tuple[tuple[str, ...], str]  # (namespace, key)
#: A query ranks at most this many candidates by meaning; the rest follow unscored.
MAX_RANKED = 1000


class BlackboardStore(BaseStore):
    """A LangGraph store over one agent's memory (an ``AgentMemory``, or a ``SyncMemory``
    for code without an event loop; :meth:`connect` makes one). ``level``: the level of
    the agent's scope that holds its own namespaces (long-term semantic memory by
    default; pick one without a default TTL). ``ttl``: LangGraph's ``TTLConfig``
    (``default_ttl`` minutes, ``refresh_on_read``)."""

    supports_ttl = True

    def __init__(self, memory: AgentMemory | SyncMemory, *,
                 level: MemoryLevel | str = MemoryLevel.SEMANTIC,
                 ttl: TTLConfig | None = None) -> None:
        self._sync = memory if isinstance(memory, SyncMemory) else None
        self.memory: AgentMemory = memory.memory if isinstance(memory, SyncMemory) else memory
        if self._sync is not None:
            loop: asyncio.AbstractEventLoop | None = self._sync.loop
        else:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
        self._loop = LoopBridge(loop)
        self.level = MemoryLevel(level)
        self.ttl_config = ttl
        self._index = NamespaceIndex(self.memory)

    @classmethod
    def connect(cls, url: str | None, agent_id: str, teams: Iterable[str] = (), *,
                level: MemoryLevel | str = MemoryLevel.SEMANTIC,
                ttl: TTLConfig | None = None) -> BlackboardStore:
        """A store of its own connection for agent ``agent_id`` (close it with
        :meth:`close` or a ``with`` block); ``url`` None: ``BLACKBOARD_REDIS_URL``."""
        return cls(SyncMemory.connect(url, agent_id, teams), level=level, ttl=ttl)

    def close(self) -> None:
        """Close the connection :meth:`connect` opened (a store over an ``AgentMemory``
        leaves it to its owner)."""
        if self._sync is not None:
            self._sync.close()

    def __enter__(self) -> BlackboardStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- BaseStore ------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._loop.run(self._batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self._loop.arun(self._batch(list(ops)))

    async def _batch(self, ops: list[Op]) -> list[Result]:
        """Reads in order against the state before the batch, then the puts, the last one
        per (namespace, key) in the order of each key's first put (as InMemoryStore)."""
        puts = self._check(ops)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op))
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(op))
            else:
                results.append(None)
        for op, sid in puts.values():
            if sid is not None:
                await self._put(op, sid)
        return results

    def _check(self, ops: Sequence[Op]) -> dict[_ItemId, tuple[PutOp, str | None]]:
        """Every op checked before any runs (so a bad one writes nothing): labels as
        LangGraph requires, scopes the agent may use, put values as JSON objects."""
        puts: dict[_ItemId, tuple[PutOp, str | None]] = {}
        for op in ops:
            if not isinstance(op, GetOp | SearchOp | ListNamespacesOp | PutOp):
                raise ValueError(f"unknown store operation {type(op).__name__}")
            validate_op_namespace(op)
            if isinstance(op, SearchOp):
                paths.check_filter(op.filter)
                self._scopes_for(op.namespace_prefix)
            elif isinstance(op, ListNamespacesOp):
                self._scopes_for(_list_prefix(op))
            elif isinstance(op, GetOp) and op.namespace:
                self._key_of(op.namespace, op.key)
                self._scope_of(op.namespace, write=False)
            elif isinstance(op, PutOp):
                puts[(op.namespace, op.key)] = (op, self._put_scope(op))
        return puts

    def _put_scope(self, op: PutOp) -> str | None:
        """The scope a put writes (None: a delete of what no put can have written)."""
        ns = op.namespace
        if op.value is None and (not ns or ns[0] == "langgraph"):
            return None
        if not ns:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if ns[0] == "langgraph":
            raise InvalidNamespaceError(
                f'Root label for namespace cannot be "langgraph". Got: {ns}')
        self._key_of(ns, op.key)
        if op.value is not None:
            if not isinstance(op.value, dict):
                raise InvalidArgument(
                    f"a store value must be a dict, not {type(op.value).__name__}")
            try:
                json.dumps(op.value, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise InvalidArgument(f"value of {ns!r}/{op.key!r} is not JSON: {exc}") from None
        if op.ttl is not None and (isinstance(op.ttl, bool) or not op.ttl > 0):
            raise InvalidArgument(f"ttl must be positive minutes or None, got {op.ttl!r}")
        return self._scope_of(ns, write=True)

    def _scope_of(self, namespace: paths.Namespace, *, write: bool) -> str:
        try:
            return paths.item_scope(self.memory.access, namespace, self.level, write=write)
        except InvalidArgument as exc:
            raise InvalidNamespaceError(f"namespace {namespace!r}: {exc}") from None

    def _scopes_for(self, prefix: paths.Namespace) -> list[str]:
        try:
            return paths.prefix_scopes(self.memory.access, prefix, self.level)
        except InvalidArgument as exc:
            raise InvalidNamespaceError(f"namespace prefix {prefix!r}: {exc}") from None

    @staticmethod
    def _key_of(namespace: paths.Namespace, key: str) -> str:
        if not isinstance(key, str):
            raise InvalidArgument(f"key must be a str, not {type(key).__name__}")
        return paths.item_key(namespace, key)

    # -- operations -----------------------------------------------------------------------

    async def _get(self, op: GetOp) -> Item | None:
        if not op.namespace:
            return None
        sid = self._scope_of(op.namespace, write=False)
        try:
            e = await self.memory.bb.scope(sid).get_by_key(self._key_of(op.namespace, op.key))
        except NotFound:
            return None
        found = paths.unwrap(e.key, e.value)
        if found is None:
            return None
        if op.refresh_ttl:
            e = await self._refresh(e)
        return item(e, found)

    async def _put(self, op: PutOp, sid: str) -> None:
        lkey = self._key_of(op.namespace, op.key)
        if op.value is None:
            try:
                e = await self.memory.bb.scope(sid).get_by_key(lkey)
            except NotFound:
                return
            await self.memory.forget(e.id, scope=sid)
            return
        team = sid.split(":")[1] if sid.startswith("team:") else None
        meta: dict[str, Any] = {"ns_since": await self._index.since(sid, op.namespace)}
        if op.ttl:
            meta["ttl_minutes"] = op.ttl
        await self.memory.store(
            paths.wrap(op.namespace, op.key, op.value), None if team else self.level,
            team=team, key=lkey, metadata=meta,
            tags={paths.ITEM_TAG, paths.namespace_tag(op.namespace)},
            ttl=op.ttl * 60 if op.ttl else None,
        )

    async def _refresh(self, e: Entry) -> Entry:
        """Restart an item's TTL (if it has one and the agent may write its scope); the
        item's ``updated_at`` stays (kept in the metadata: the update moves the entry's)."""
        minutes = e.metadata.get("ttl_minutes")
        if not minutes or not self.memory.access.can_write(e.scope):
            return e
        meta = {**e.metadata, "updated_at": e.metadata.get("updated_at", e.updated_at)}
        try:
            return await self.memory.bb.scope(e.scope).update(e.id, ttl=float(minutes) * 60,
                                                               metadata=meta)
        except NotFound:  # expired or deleted since it was read: it was read all the same
            return e

    async def _entries(self, prefix: paths.Namespace) -> list[tuple[Entry, paths.Namespace]]:
        """The live items under ``prefix`` with their namespaces, from the tag indexes."""
        out = []
        for sid in self._scopes_for(prefix):
            wanted = [tag for tag, ns in (await self._index.of_scope(sid)).items()
                      if ns[: len(prefix)] == prefix]  # exact: search has no wildcards
            if not wanted:
                continue
            for e in await self.memory.bb.scope(sid).entries(any_of=wanted, limit=None):
                found = paths.unwrap(e.key, e.value)
                if found is not None and found[0][: len(prefix)] == prefix:
                    out.append((e, found[0]))
        return out

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        cands = [(e, ns) for e, ns in await self._entries(op.namespace_prefix)
                 if paths.value_matches(e.value["value"], op.filter)]
        first: dict[paths.Namespace, str] = {}
        for e, ns in cands:
            since = str(e.metadata.get("ns_since", ""))
            first[ns] = min(first.get(ns, since), since)
        cands.sort(key=lambda c: (first[c[1]], c[1], c[0].created_at, c[0].id))
        scores: dict[str, float] = {}
        if op.query and cands:
            scores = await self._rank(op.query, cands)
            ranked = sorted((c for c in cands if c[0].id in scores),
                            key=lambda c: -scores[c[0].id])
            cands = ranked + [c for c in cands if c[0].id not in scores]
        page = cands[op.offset: op.offset + op.limit]
        out = []
        for e, _ns in page:
            if op.refresh_ttl:
                e = await self._refresh(e)
            found = paths.unwrap(e.key, e.value)
            if found is not None:
                out.append(search_item(e, found, scores.get(e.id)))
        return out

    async def _rank(self, query: str, cands: list[tuple[Entry, paths.Namespace]]
                    ) -> dict[str, float]:
        """Our recall's scores of the candidates (hybrid: dense + BM25, fused)."""
        tags = sorted({paths.namespace_tag(ns) for _e, ns in cands})
        scopes = sorted({e.scope for e, _ns in cands})
        want = {e.id for e, _ns in cands}
        hits = await self.memory.recall(MemoryQuery(
            query=query, scopes=scopes, tag_filter=TagFilter(all_of=frozenset({paths.ITEM_TAG}),
                                                             any_of=frozenset(tags)),
            max_results=min(len(cands), MAX_RANKED), collapse=False,
            consistency="semantic"))
        return {h.entry.id: float(h.score) for h in hits if h.entry.id in want}

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        seen: set[paths.Namespace] = set()
        for sid in self._scopes_for(_list_prefix(op)):
            seen.update((await self._index.of_scope(sid)).values())
        found = [ns for ns in seen if all(
            paths.namespace_matches(ns, tuple(c.path), c.match_type)
            for c in op.match_conditions or ())]
        if op.max_depth is not None:
            found = list({ns[: op.max_depth] for ns in found})
        return sorted(found)[op.offset: op.offset + op.limit]


def _list_prefix(op: ListNamespacesOp) -> paths.Namespace:
    """The prefix a listing asks for (its last prefix condition), () for none."""
    prefix: paths.Namespace = ()
    for cond in op.match_conditions or ():
        if cond.match_type == "prefix":
            prefix = tuple(cond.path)
    return prefix
