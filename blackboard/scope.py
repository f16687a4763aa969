"""A scope: one keyspace of entries with its indexes, feed and enforced policy."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from . import tracing
from .batch_write import write_batch
from .entry import Entry, Event, ScopePolicy, decode_entry, decode_event
from .errors import BlackboardError, InvalidArgument, NotFound
from .ids import is_entry_id
from .keys import ScopeKeys, partition_of
from .request import (
    EncodedWrite,
    Retire,
    WriteRequest,
    encode_write,
    entry_from_write_reply,
    reply_fields,
)
from .scripts import raise_for_script_error, run_script, run_script_many
from .validation import (
    check_embedding,
    check_importance,
    check_size,
    check_ttl,
    encode_json,
    encode_metadata,
    validate_key,
    validate_scope,
    validate_tags,
)

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["Scope"]

_UNSET: Any = object()
#: Field of an entry evicted or expired for readers but kept until the dataflow took it in.
_RETIRED = b"retired"


def _check_id(entry_id: object) -> str:
    if not isinstance(entry_id, str) or not is_entry_id(entry_id):
        raise InvalidArgument(f"entry id must match [0-9A-Za-z_-]{{1,64}}: {entry_id!r:.80}")
    return entry_id


class Scope:
    """Handle on one scope; cheap to create, holds no state but its name.

    All times are integer milliseconds since the epoch; ``ttl`` arguments are seconds.
    """

    def __init__(self, bb: Blackboard, scope_id: str) -> None:
        self.id = validate_scope(scope_id)
        self.bb = bb
        self.partition = partition_of(scope_id, bb.partitions)
        self.keys = ScopeKeys(scope_id, self.partition)
        self._script_keys = self.keys.script_keys()

    def __repr__(self) -> str:
        return f"Scope({self.id!r}, partition={self.partition})"

    # -- writes ---------------------------------------------------------------------------

    def _encode(self, req: WriteRequest, traceparent: str | None = None) -> EncodedWrite:
        return encode_write(req, self.id, self.bb.settings.max_entry_bytes, traceparent)

    async def write(
        self,
        value: Any,
        *,
        tags: Iterable[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
        key: str | None = None,
        ttl: float | None = None,
        importance: float = 0.5,
        strength: float = 1.0,
        source: Sequence[str] = (),
        entry_id: str | None = None,
        embedding: bytes | None = None,
        embedder: str | None = None,
        key_mode: str = "upsert",
        author: str | None = None,
        retire: Retire | None = None,
    ) -> Entry:
        """Store one entry (or update the live entry holding ``key``) and publish its event.

        Retrying with the same ``entry_id`` changes nothing and returns the stored entry.
        ``key_mode="supersede"`` keeps the old holder of ``key`` and marks it superseded.
        ``author``: the writing agent, recorded outside agent scopes once the ACL allows it
        (:class:`WriteRequest`). ``retire``: what the superseded holder becomes,
        compare-and-set (:class:`~blackboard.request.Retire`).
        """
        req = WriteRequest(
            value, tags, metadata, key, ttl, importance, strength, tuple(source),
            entry_id, embedding, embedder, key_mode, author, retire,
        )
        if tracing.ENABLED:
            with tracing.span("blackboard.write", {"blackboard.scope": self.id}):
                return await self._write(req, tracing.traceparent())
        return await self._write(req, None)

    async def _write(self, req: WriteRequest, traceparent: str | None) -> Entry:
        enc = self._encode(req, traceparent)
        try:
            reply = await run_script(self.bb.client, "write", self._script_keys, list(enc.args),
                                     wait=self.bb.wait, what=f"entry {enc.entry_id} of {self.id}")
        except BlackboardError as exc:
            raise_for_script_error(exc, enc.entry_id, self.id)
            raise
        return entry_from_write_reply(self.id, enc, reply)

    async def write_many(self, items: Iterable[WriteRequest | Any]) -> list[Entry]:
        """Write many entries at once; every item is validated before any is sent.

        An item is a :class:`WriteRequest` or a bare value. The batch is one MULTI/EXEC
        (:func:`blackboard.batch_write.write_batch`): a writer that dies mid-batch leaves
        none of it; ids are fixed before sending, so a failed batch can be retried whole.
        """
        reqs = [it if isinstance(it, WriteRequest) else WriteRequest(it) for it in items]
        return (await write_batch(self.bb, [(self.id, reqs)]))[0]

    async def update(
        self,
        entry_id: str,
        *,
        value: Any = _UNSET,
        tags: Iterable[str] | None = _UNSET,
        metadata: Mapping[str, Any] | None = _UNSET,
        importance: float = _UNSET,
        ttl: float | None = _UNSET,
        source: Sequence[str] = _UNSET,
        embedding: bytes | None = _UNSET,
        embedder: str | None = _UNSET,
        expected_version: int | None = None,
        op_id: str | None = None,
    ) -> Entry:
        """Change the given fields; with ``expected_version`` raise VersionConflict on a race.

        ``ttl=None`` removes the expiry. ``op_id`` makes a retried update a no-op.
        """
        _check_id(entry_id)
        pairs: list[str | bytes] = []
        if value is not _UNSET:
            vj = encode_json(value, "value")
            check_size(vj, "", self.bb.settings.max_entry_bytes)
            pairs += ["value", vj]
        if tags is not _UNSET:
            pairs += ["tags", json.dumps(list(validate_tags(tags)), ensure_ascii=False)]
        if metadata is not _UNSET:
            pairs += ["metadata", encode_metadata(metadata)]
        if importance is not _UNSET:
            pairs += ["importance", repr(check_importance(importance))]
        if ttl is not _UNSET:
            ms = check_ttl(ttl)
            pairs += ["ttl_ms", str(ms or 0)]
        if source is not _UNSET:
            src = [_check_id(s) for s in source]
            pairs += ["source", json.dumps(src)]
        if embedding is not _UNSET:
            if embedding is not None:
                check_embedding(embedding)
            # Without ``embedder`` the vector is stored under no embedder's name.
            name = "" if embedder is _UNSET else embedder or ""
            pairs += ["embedding", embedding or b"", "embedder", name]
        if op_id is not None:
            pairs += ["op_id", _check_id(op_id)]
        if expected_version is not None and (
            isinstance(expected_version, bool) or not isinstance(expected_version, int)
        ):
            raise InvalidArgument("expected_version must be an int")
        args = [entry_id, "" if expected_version is None else str(expected_version), self.id]
        try:
            reply = await run_script(self.bb.client, "update", self._script_keys, args + pairs,
                                     wait=self.bb.wait, what=f"update of {entry_id} in {self.id}")
        except BlackboardError as exc:
            raise_for_script_error(exc, entry_id, self.id)
            raise
        return decode_entry(self.id, reply_fields(reply[2:]))

    async def delete(self, entry_id: str, *, expected_version: int | None = None,
                     merged: bool = False) -> bool:
        """Delete an entry and its index members; False when there was nothing to delete.
        ``merged``: the dedupe job removes a duplicate it merged into another entry (counted
        in the scope's pool statistics, ``removed.merged``; an explicit delete is not)."""
        _check_id(entry_id)
        args = [entry_id, self.id, "" if expected_version is None else str(expected_version)]
        if merged:
            args.append("merged")
        try:
            ev = await run_script(self.bb.client, "delete", self._script_keys, args,
                                  wait=self.bb.wait, what=f"delete of {entry_id} in {self.id}")
        except BlackboardError as exc:
            raise_for_script_error(exc, entry_id, self.id)
            raise
        return bool(ev)

    async def delete_many(self, entry_ids: Sequence[str]) -> list[bool]:
        """Delete entries in one MULTI/EXEC: all of them or, if the client dies first, none
        (as :meth:`write_many`); -> per id, False when there was nothing to delete."""
        ids = [_check_id(i) for i in entry_ids]
        if not ids:
            return []
        replies = await run_script_many(
            self.bb.client, "delete", [(self._script_keys, [i, self.id, ""]) for i in ids],
            atomic=True, wait=self.bb.wait, what=f"delete of {len(ids)} entries in {self.id}",
        )
        for i, r in zip(ids, replies, strict=True):
            if isinstance(r, Exception):
                raise_for_script_error(r, i, self.id)
                raise r
        return [bool(r) for r in replies]

    async def reinforce(
        self, entry_id: str, *, by: str = "", boost: float = 0.2, max_strength: float = 1.0
    ) -> tuple[float, int]:
        """Boost strength (decayed to now, plus ``boost``, capped); -> (strength, count)."""
        _check_id(entry_id)
        check_importance(boost)
        check_importance(max_strength)
        try:
            r = await run_script(
                self.bb.client, "reinforce", self._script_keys,
                [entry_id, self.id, by, repr(boost), repr(max_strength)],
                wait=self.bb.wait, what=f"reinforcement of {entry_id} in {self.id}",
            )
        except BlackboardError as exc:
            raise_for_script_error(exc, entry_id, self.id)
            raise
        return float(r[0]), int(r[1])

    async def set_embeddings(
        self, items: Sequence[tuple[str, int, bytes]], embedder: str
    ) -> int:
        """Attach embeddings ``(entry id, version, float32 bytes)`` computed by ``embedder``.

        Skips entries that changed since (their new version is embedded on its own). No
        version bump and no event: an embedding is an index attachment. One round trip.
        """
        if not items:
            return 0
        if not embedder:
            raise InvalidArgument("set_embeddings needs the embedder's name")
        for entry_id, version, vec in items:
            _check_id(entry_id)
            check_embedding(vec, empty_ok=False)
            if isinstance(version, bool) or not isinstance(version, int):
                raise InvalidArgument("version must be an int")
        replies = await run_script_many(self.bb.client, "embed", [
            ([self.keys.entry(entry_id)], [str(version), vec, embedder])
            for entry_id, version, vec in items
        ])
        for r in replies:
            if isinstance(r, Exception):
                raise_for_script_error(r, scope=self.id)
        return sum(int(r) for r in replies)

    # -- policy ---------------------------------------------------------------------------

    async def set_policy(self, policy: ScopePolicy) -> None:
        """Store the limits the write script enforces for this scope."""
        await self.bb.client.hset(self.keys.cfg, mapping=policy.to_redis())

    async def policy(self) -> ScopePolicy:
        return ScopePolicy.from_redis(await self.bb.client.hgetall(self.keys.cfg))

    # -- reads ----------------------------------------------------------------------------

    async def get(self, entry_id: str) -> Entry:
        """The live entry ``entry_id``; NotFound if it does not exist or has expired."""
        _check_id(entry_id)
        h = await self.bb.client.hgetall(self.keys.entry(entry_id))
        if not h or _RETIRED in h:  # retired: evicted or expired, kept for the dataflow only
            raise NotFound(f"no entry {entry_id!r} in scope {self.id!r}")
        e = decode_entry(self.id, h)
        if e.expired(self.bb.now_ms()):
            raise NotFound(f"entry {entry_id!r} in scope {self.id!r} has expired")
        return e

    async def get_many(self, entry_ids: Sequence[str]) -> list[Entry | None]:
        """Entries in the order asked; None for a missing or expired one. One round trip."""
        ids = [_check_id(i) for i in entry_ids]
        if not ids:
            return []
        async with self.bb.client.pipeline(transaction=False) as pipe:
            for i in ids:
                pipe.hgetall(self.keys.entry(i))
            hashes = await pipe.execute()
        now = self.bb.now_ms()
        out: list[Entry | None] = []
        for h in hashes:
            e = decode_entry(self.id, h) if h and _RETIRED not in h else None
            out.append(None if e is None or e.expired(now) else e)
        return out

    async def get_by_key(self, key: str) -> Entry:
        """The live entry holding logical ``key``; NotFound otherwise."""
        validate_key(key)
        entry_id = await self.bb.client.hget(self.keys.keys, key)
        if entry_id is None:
            raise NotFound(f"no entry with key {key!r} in scope {self.id!r}")
        return await self.get(entry_id.decode())

    async def ids_by_key_glob(self, glob: str) -> list[str]:
        """Ids of the entries whose logical key matches the Redis glob ``glob`` (HSCAN of
        the key index: O(keys of the scope), in pages; may include expired holders)."""
        return [v.decode() async for _k, v in self.bb.client.hscan_iter(self.keys.keys, match=glob)]

    async def count(self) -> int:
        """Live entries (expired ones not yet swept are not counted). O(log n)."""
        now = self.bb.now_ms()
        async with self.bb.client.pipeline(transaction=False) as pipe:
            pipe.zcard(self.keys.ix)
            pipe.zcount(self.keys.exp, "-inf", now)
            total, expired = await pipe.execute()
        return int(total) - int(expired)

    async def tags(self) -> dict[str, int]:
        """``{tag: live entries carrying it}`` from the counter hash, never a scan.

        Entries expired but not yet swept are subtracted (O(those entries)).
        """
        now = self.bb.now_ms()
        async with self.bb.client.pipeline(transaction=False) as pipe:
            pipe.hgetall(self.keys.tags)
            pipe.zrangebyscore(self.keys.exp, "-inf", now)
            counts, due = await pipe.execute()
        out = {k.decode(): int(v) for k, v in counts.items()}
        if due:
            async with self.bb.client.pipeline(transaction=False) as pipe:
                for i in due:
                    pipe.hget(self.keys.entry(i.decode()), "tags")
                for tj in await pipe.execute():
                    for t in json.loads(tj or b"[]"):
                        out[t] = out.get(t, 0) - 1
        return {k: v for k, v in sorted(out.items()) if v > 0}

    async def ids(self, *, start_ms: int | None = None, end_ms: int | None = None) -> list[str]:
        """Ids of entries created in [start_ms, end_ms], oldest first (includes unswept expired)."""
        lo = "-inf" if start_ms is None else start_ms
        hi = "+inf" if end_ms is None else end_ms
        return [i.decode() for i in await self.bb.client.zrangebyscore(self.keys.ix, lo, hi)]

    async def entries(
        self,
        *,
        all_of: Iterable[str] | None = None,
        any_of: Iterable[str] | None = None,
        none_of: Iterable[str] | None = None,
        start_ms: int | None = None,
        end_ms: int | None = None,
        limit: int | None = 100,
        newest_first: bool = True,
    ) -> list[Entry]:
        """Live entries matching the tag filter and time range (created_at, ms, inclusive),
        newest first unless told; ``limit=None`` returns every match. From the indexes,
        never a scan: :meth:`Reads.listing <blackboard.reads.Reads.listing>`."""
        return await self.bb.reads.listing(
            self, all_of=all_of, any_of=any_of, none_of=none_of, start_ms=start_ms,
            end_ms=end_ms, limit=limit, newest_first=newest_first,
        )

    # -- events ---------------------------------------------------------------------------

    async def last_event_id(self) -> str:
        """Id of the newest event in the feed, ``0-0`` when it is empty."""
        return (await self.bb.reads.newest_event_ids([self.id]))[self.id]

    async def feed(
        self, since: str | None = None, *, block_ms: int = 1000, count: int = 100
    ) -> AsyncIterator[Event]:
        """Events of this scope, forever: after ``since`` (a feed id, ``"0"`` for all
        retained), or from now when ``since`` is None. Stop by breaking out of the loop.
        """
        last = since if since is not None else await self.last_event_id()
        while True:
            got = await self.bb.reads.events(
                {self.id: last}, self.partition, count=count, block_ms=block_ms
            )
            for _scope, ev in got:
                last = ev.id
                yield ev

    async def events(
        self, since: str = "-", until: str = "+", count: int | None = None
    ) -> list[Event]:
        """Retained events of the feed between two ids (inclusive), oldest first."""
        items = await self.bb.client.xrange(self.keys.feed, since, until, count=count)
        return [decode_event(sid, f, self.partition) for sid, f in items]

    async def newest_events(self, count: int) -> list[Event]:
        """The newest ``count`` retained events of the feed, oldest first."""
        items = await self.bb.client.xrevrange(self.keys.feed, count=count)
        return [decode_event(sid, f, self.partition) for sid, f in reversed(items)]
