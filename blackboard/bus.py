"""One partition's bus: the event stream, its consumer groups and its dead-letter queue.

Every command on ``bb:{pN}:bus`` and ``bb:{pN}:dlq`` that is not a reader's own
(XREADGROUP / XCLAIM live in :mod:`blackboard.consumer`) goes through :class:`Bus`, so the
layers above never name a stream key nor decode XINFO replies themselves; dead letters are
read, re-driven and audited through ``bb.dead_letters`` (:mod:`blackboard.dead_letters`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .entry import Event
from .errors import AccessDenied, ServerError
from .keys import PartitionKeys
from .scripts import run_script

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["Bus", "BusCounts", "GroupInfo"]


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """One consumer group on a bus as XINFO GROUPS shows it; ``lag`` is None when Redis
    cannot tell (events trimmed, or Redis before 7.0)."""

    #: the group's name: the role that consumes through it
    role: str
    consumers: int
    pending: int
    lag: int | None
    last_delivered: str


@dataclass(frozen=True, slots=True)
class BusCounts:
    """Lengths of the partition's streams and sets, read in one round trip."""

    length: int
    dlq: int
    scopes: int
    #: content events written and not yet relayed to the bus
    inbox: int
    #: entries evicted or expired for readers, kept until every edge consolidated them
    retained: int
    #: entries waiting for a vector from the index role (blackboard.vector_queue)
    unembedded: int = 0


class Bus:
    """The bus of partition ``partition``; cheap to build (nothing is sent)."""

    def __init__(self, bb: Blackboard, partition: int) -> None:
        self.bb, self.partition = bb, partition
        self._k = PartitionKeys(partition)

    @property
    def stream(self) -> str:
        """The stream's key, for reads that span buses (e.g. the newest id of each)."""
        return self._k.bus

    async def ensure_group(self, role: str) -> None:
        """Create the role's consumer group at id 0 (idempotent), so events written before
        the role's first worker started are still delivered to it and not trimmed."""
        try:
            await self.bb.client.xgroup_create(self._k.bus, role, id="0", mkstream=True)
        except ServerError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def ack(self, role: str, ids: Iterable[str]) -> int:
        """XACK ``ids`` for ``role``; -> how many were still pending."""
        ids = list(ids)
        return int(await self.bb.client.xack(self._k.bus, role, *ids)) if ids else 0

    async def dead_letter(
        self, role: str, event: Event, deliveries: int, reason: str, maxlen: int = 100_000
    ) -> bool:
        """Move ``event`` to the DLQ with ``reason`` and ack it, atomically (``dlq.lua``);
        False when the group no longer holds it pending (another consumer settled it)."""
        fields: list[Any] = [
            "scope", event.scope,
            "type", str(event.type),
            "entry", event.entry_id,
            "version", str(event.version),
            "at", str(event.at),
        ]
        return await self.dead_letter_fields(role, event.id, deliveries, reason, fields, maxlen)

    async def dead_letter_fields(
        self,
        role: str,
        event_id: str | bytes,
        deliveries: int,
        reason: str,
        fields: list[Any],
        maxlen: int = 100_000,
    ) -> bool:
        """:meth:`dead_letter` with the DLQ record's fields given flat (an event that
        could not be decoded keeps its raw fields)."""
        r = await run_script(
            self.bb.client,
            "dlq",
            [self._k.bus, self._k.dlq],
            [role, event_id, str(deliveries), reason, str(maxlen), *fields],
        )
        return bool(r)

    async def dlq_len(self) -> int:
        return int(await self.bb.client.xlen(self._k.dlq))

    async def groups(self) -> list[GroupInfo]:
        """The consumer groups on the bus; none before the stream exists."""
        try:
            raw = await self.bb.client.xinfo_groups(self._k.bus)
        except (ServerError, AccessDenied):
            return []  # no such stream yet (or this user may not read it)
        out = []
        for g in raw:
            lag = g.get("lag")
            out.append(GroupInfo(
                role=_s(g["name"]),
                consumers=int(g["consumers"]),
                pending=int(g.get("pending", 0)),
                lag=None if lag is None else int(lag),
                last_delivered=_s(g["last-delivered-id"]),
            ))
        return out

    async def oldest_pending(self, role: str) -> str | None:
        """The lowest id ``role``'s group holds pending (None: nothing is)."""
        summary = await self.bb.client.xpending(self._k.bus, role)
        low = summary["min"]
        return None if low is None else _s(low)

    async def counts(self) -> BusCounts:
        """Bus, DLQ, inbox lengths, scope count, retained and unembedded entries: one round
        trip."""
        k = self._k
        async with self.bb.client.pipeline(transaction=False) as pipe:
            pipe.xlen(k.bus)
            pipe.xlen(k.dlq)
            pipe.scard(k.scopes)
            pipe.llen(k.inbox)
            pipe.scard(k.retired)
            pipe.zcard(k.unembedded)
            replies: list[Any] = await pipe.execute()
        return BusCounts(*(int(r) for r in replies))

    async def count_before(self, stream_id: str) -> int:
        """Events on the bus below ``stream_id`` (what a trim to it would remove)."""
        return len(await self.bb.client.xrange(self._k.bus, "-", f"({stream_id}"))

    async def trim_to(self, stream_id: str) -> int:
        """Remove the events below ``stream_id`` exactly; -> how many."""
        return int(await self.bb.client.xtrim(self._k.bus, minid=stream_id, approximate=False))


def _s(v: bytes | str) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)

