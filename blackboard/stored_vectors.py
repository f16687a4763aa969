"""The vectors stored on entries, read back by an index follower that would otherwise
compute them itself.

``embed.lua`` stores a vector and publishes no event (an index attachment, not a content
change), so a follower that read an entry before the index role embedded it never learns
the vector arrived. Before its model runs it asks here: the stored vectors of the entries
it is about to embed (one round trip), and whether an index role drains these partitions'
queues now (then the vectors of what it still lacks are on their way).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import keys as K
from .errors import AccessDenied
from .keys import PartitionKeys
from .vector_queue import INDEX_ROLE

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["StoredVector", "StoredVectors"]

_FIELDS = ("version", "embedder", "embedding")


@dataclass(frozen=True, slots=True)
class StoredVector:
    """An entry's stored vector: the entry's ``version`` when read, the ``embedder``'s name
    and the float32 bytes. The vector is the content's at that version: ``embed.lua``
    stores one only while the entry is at the version it was computed from, and an update
    of the value or metadata drops it (``update.lua``)."""

    version: int
    embedder: str
    embedding: bytes


class StoredVectors:
    """Reads of stored vectors and of who stores them; cheap to build (nothing is sent)."""

    def __init__(self, bb: Blackboard) -> None:
        self.bb = bb

    async def read(
        self, wanted: Mapping[str, Sequence[str]]
    ) -> dict[str, list[StoredVector | None]]:
        """The stored vectors of several scopes' entries (scope -> ids), in order, in one
        round trip; None for an entry that is missing or has none."""
        async with self.bb.client.pipeline(transaction=False) as pipe:
            for s, ids in wanted.items():
                k = self.bb.scope(s).keys
                for eid in ids:
                    pipe.hmget(k.entry(eid), _FIELDS)
            replies = iter(await pipe.execute()) if wanted else iter(())
        return {s: [_vector(next(replies)) for _ in ids] for s, ids in wanted.items()}

    async def drained(self, partitions: Iterable[int], live_within_ms: int) -> set[int]:
        """Those of ``partitions`` whose entries an index role embeds: their writes queue
        what needs a vector (the ``indexing`` flag, which stays once set) and an index
        worker beat within ``live_within_ms``. A user who may not read the workers'
        presence (an agent's) gets the flagged partitions: the caller bounds its wait.
        One round trip; read-only (:meth:`Presence.live <blackboard.presence.Presence.live>`
        also prunes)."""
        parts = sorted(set(partitions))
        if not parts:
            return set()
        since = self.bb.now_ms() - live_within_ms
        async with self.bb.client.pipeline(transaction=False) as pipe:
            for p in parts:
                pipe.exists(PartitionKeys(p).indexing)
            pipe.zcount(K.workers_of(INDEX_ROLE), since, "+inf")
            *flags, live = await pipe.execute(raise_on_error=False)
        for f in flags:
            if isinstance(f, Exception):
                raise f
        if isinstance(live, AccessDenied):
            live = 1
        elif isinstance(live, Exception):
            raise live
        if not int(live):
            return set()
        return {p for p, f in zip(parts, flags, strict=True) if int(f)}


def _vector(reply: Sequence[bytes | None]) -> StoredVector | None:
    version, embedder, embedding = reply
    if version is None or not embedder or not embedding:
        return None
    try:
        return StoredVector(int(version), embedder.decode("utf-8", "replace"), embedding)
    except ValueError:  # a damaged version field: not a vector to trust
        return None
