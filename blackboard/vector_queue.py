"""One partition's queue of entries waiting for a vector (``bb:{pN}:unembedded``).

While the index role runs it sets ``bb:{pN}:indexing``; the mutation scripts then add
``<scope>|<entry id>`` to the queue on every content change (``written``/``updated``, in
``emit`` of ``_lib.lua``). The index role reads the queue here instead of the bus, so a model
slower than the writes holds neither bus events nor retired entries: what it costs while it
lags is one queue member per waiting entry (the entries themselves exist anyway). Settling
goes through ``embed.lua``: a vector is stored, and the member removed, only while the entry
is at the version it was computed from, so an update queued meanwhile is never dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import InvalidArgument
from .ids import is_entry_id
from .keys import PartitionKeys, partition_of
from .scripts import run_script_many
from .validation import validate_scope

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["INDEX_ROLE", "Queued", "VectorQueue"]

#: The worker role that drains these queues (``workers.indexer``); its presence tells an
#: index follower that the vectors it lacks are being computed (:mod:`.stored_vectors`).
INDEX_ROLE = "index"
_SETTLE_WRITTEN = (b"written", b"updated")


@dataclass(frozen=True, slots=True)
class Queued:
    """An entry waiting for a vector, and since when (ms)."""

    scope: str
    entry_id: str
    since_ms: int


class VectorQueue:
    """The queue of partition ``partition``; cheap to build (nothing is sent)."""

    def __init__(self, bb: Blackboard, partition: int) -> None:
        self.bb, self.partition = bb, partition
        self._k = PartitionKeys(partition)

    async def enable(self) -> int:
        """Make writes queue their entries from now on, and queue those written before
        (the index role, at start); -> entries queued. The flag's value says whether the
        entries written before it was first set have been queued: ``1`` while that
        backfill may still be owed (set, then a crash), ``ready`` once it is done; the
        scripts only test that it exists."""
        if await self.bb.client.get(self._k.indexing) == b"ready":
            return 0
        await self.bb.client.set(self._k.indexing, "1")
        queued = await self.backfill()
        await self.bb.client.set(self._k.indexing, "ready")
        return queued

    async def backfill(self) -> int:
        """Queue every entry of this partition's scopes that has no vector: what was
        written before the queue was turned on (writes since are queued by the scripts;
        ZADD NX makes a double harmless). O(entries of the partition), once per partition
        and deployment. -> entries queued."""
        queued, now = 0, self.bb.now_ms()
        for scope in sorted(await self.bb.upkeep(self.partition).scope_ids()):
            if not self._our_scope(scope):
                continue  # junk in the scope set (an agent may SADD there)
            sk = self.bb.scope_keys(scope)
            ids = [i.decode() for i in await self.bb.client.zrange(sk.ix, 0, -1)]
            for at in range(0, len(ids), 1000):
                chunk = ids[at : at + 1000]
                async with self.bb.client.pipeline(transaction=False) as pipe:
                    for eid in chunk:
                        pipe.hget(sk.entry(eid), "embedder")
                    have = await pipe.execute()
                members = {f"{scope}|{eid}": now
                           for eid, emb in zip(chunk, have, strict=True) if not emb}
                if members:
                    queued += int(await self.bb.client.zadd(self._k.unembedded, members,
                                                            nx=True))
        return queued

    async def length(self) -> int:
        return int(await self.bb.client.zcard(self._k.unembedded))

    async def take(self, count: int) -> list[Queued]:
        """The ``count`` longest waiting entries (they stay queued until settled). Members
        that name no entry of this partition (an agent may ZADD anything) are dropped."""
        raw = await self.bb.client.zrange(self._k.unembedded, 0, count - 1, withscores=True)
        out, junk = [], []
        for member, score in raw:
            scope, _, eid = member.decode("utf-8", "replace").rpartition("|")
            if not self._ours(scope, eid):
                junk.append(member)
                continue
            out.append(Queued(scope, eid, int(score)))
        if junk:
            await self.bb.client.zrem(self._k.unembedded, *junk)
        return out

    def _ours(self, scope: str, entry_id: str) -> bool:
        return is_entry_id(entry_id) and self._our_scope(scope)

    def _our_scope(self, scope: str) -> bool:
        try:
            validate_scope(scope)
        except InvalidArgument:
            return False
        return partition_of(scope, self.bb.partitions) == self.partition

    async def settle(
        self,
        scope: str,
        items: Sequence[tuple[str, int | None, bytes]],
        embedder: str,
    ) -> int:
        """Settle queued entries of ``scope``: ``(entry id, version, vector)``; a vector
        is stored only while the entry is queued and at ``version`` (each queued version is
        embedded once, however many indexers race); an empty vector only removes the entry
        from the queue when it is at ``version`` (its vector is current); version None
        removes it when the entry is missing, retired or expired. -> vectors stored."""
        sk = self.bb.scope_keys(scope)
        calls: list[tuple[list[str], list[Any]]] = []
        for eid, version, vec in items:
            if version is None:
                calls.append(([sk.entry(eid)], ["", b"", embedder, "gone"]))
            else:
                calls.append(([sk.entry(eid)], [str(version), vec, embedder, "queued"]))
        replies = await run_script_many(self.bb.client, "embed", calls)
        for r in replies:
            if isinstance(r, Exception):
                raise r
        return sum(int(r) for r in replies)

    async def adopt_group(self, role: str) -> int:
        """Queue what a bus consumer group ``role`` had not acked, then destroy the group
        (the index role read the bus through one before it read this queue: its backlog is
        carried over, and the group no longer holds the bus trim and the flowmark back).
        Call after :meth:`enable`. -> entries queued."""
        bus = self.bb.bus(self.partition)
        group = next((g for g in await bus.groups() if g.role == role), None)
        if group is None:
            return 0
        start = (await bus.oldest_pending(role)) if group.pending else None
        low = f"({group.last_delivered}" if start is None else start
        queued, now = 0, self.bb.now_ms()
        while True:
            page = await self.bb.client.xrange(self._k.bus, low, "+", count=1000)
            members = {
                f"{f[b'scope'].decode()}|{f[b'entry'].decode()}": now
                for _, f in page
                if f.get(b"type") in _SETTLE_WRITTEN and b"scope" in f and b"entry" in f
            }
            if members:
                queued += int(await self.bb.client.zadd(self._k.unembedded, members, nx=True))
            if len(page) < 1000:
                break
            last = page[-1][0]
            low = f"({last.decode() if isinstance(last, bytes) else last}"
        await self.bb.client.xgroup_destroy(self._k.bus, role)  # 0 if another did
        return queued

    async def drop(self, scope: str, entry_id: str) -> int:
        """Remove one entry from the queue unembedded (the model keeps failing on it)."""
        return int(await self.bb.client.zrem(self._k.unembedded, f"{scope}|{entry_id}"))
