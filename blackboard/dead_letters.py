"""Dead letters of the partition buses, their re-drive, and the audit log of re-drives.

A dead letter (``dlq.lua``) keeps the event's scope, type, entry, version and time, the
group that failed on it and why. Re-driving (``redrive.lua``, one script) appends that
event to the bus again for that group only (``only`` = the group: every other group's
reader acks it unhandled, so no role handles an event twice) and deletes the dead letter;
a second re-drive of the same letter finds nothing (NotFound). The audit record goes to
``bb:audit``, a stream in its own slot, written after the script.

:class:`DeadLetters` (``bb.dead_letters``) is the one way to read the DLQs: a dead letter is
written by the consumer (``Bus.dead_letter``), read, re-driven and audited here.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import keys as K
from .codec import as_str
from .errors import InvalidArgument, NotFound
from .keys import PartitionKeys, partition_of
from .scripts import run_script

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["AUDIT_MAXLEN", "AuditRecord", "DeadLetter", "DeadLetters"]

#: Audit records kept (approximate trim): re-drives are rare operator actions.
AUDIT_MAXLEN = 10_000

@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One dead-lettered event (``id`` its DLQ stream id, ``dead_at`` ms from that id).
    ``fields``: every field as stored (a dataflow batch's letter also names its ``kind``,
    ``edge``, ``target`` and ``items``)."""

    partition: int
    id: str
    group: str
    event_id: str
    deliveries: int
    reason: str
    scope: str
    type: str
    entry: str
    version: int
    at: int
    dead_at: int
    fields: dict[str, str] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class AuditRecord:
    id: str
    at: int
    by: str
    action: str
    partition: int
    dlq_id: str
    bus_id: str
    group: str
    scope: str
    entry: str
    reason: str


def _dead_letter(partition: int, sid: Any, raw: Any) -> DeadLetter:
    # a field written by hand that is not UTF-8 is replaced, not fatal, so the operator
    # still sees the letter
    f = {as_str(k): as_str(v, "replace") for k, v in raw.items()}
    sid = as_str(sid)
    return DeadLetter(
        partition=partition, id=sid, group=f.get("group", ""), event_id=f.get("event_id", ""),
        deliveries=int(f.get("deliveries") or 0), reason=f.get("reason", ""),
        scope=f.get("scope", ""), type=f.get("type", ""), entry=f.get("entry", ""),
        version=int(f.get("version") or 0), at=int(f.get("at") or 0),
        dead_at=int(sid.partition("-")[0] or 0), fields=f,
    )


class DeadLetters:
    """The dead letters of every partition bus (``bb.dead_letters``): list, re-drive, audit."""

    def __init__(self, bb: Blackboard) -> None:
        self.bb = bb

    async def list(
        self, *, limit: int = 100, partition: int | None = None
    ) -> builtins.list[DeadLetter]:
        """The newest ``limit`` dead letters of one partition or of all, newest first."""
        if limit < 1:
            raise InvalidArgument(f"limit must be >= 1 (got {limit})")
        parts = range(self.bb.partitions) if partition is None else [self._check(partition)]
        out: builtins.list[DeadLetter] = []
        for p in parts:
            got = await self.bb.client.xrevrange(PartitionKeys(p).dlq, count=limit)
            out += [_dead_letter(p, sid, f) for sid, f in got]
        out.sort(key=lambda d: d.dead_at, reverse=True)
        return out[:limit]

    def _check(self, partition: int) -> int:
        if not 0 <= partition < self.bb.partitions:
            raise InvalidArgument(
                f"partition must be in [0, {self.bb.partitions}) (got {partition})"
            )
        return partition

    async def redrive(self, partition: int, dlq_id: str, *, by: str) -> AuditRecord:
        """Put dead letter ``dlq_id`` of ``partition`` back on the bus for the group that
        failed on it, and audit it as ``by``; NotFound when there is no such dead letter
        (also when another operator re-drove it first)."""
        bb = self.bb
        pk = PartitionKeys(self._check(partition))
        rows = [(sid, f) for sid, f in await bb.client.xrange(pk.dlq, dlq_id, dlq_id)
                if as_str(sid) == dlq_id]
        if not rows:
            raise NotFound(f"no dead letter {dlq_id!r} in partition {partition}")
        d = _dead_letter(partition, *rows[0])
        if not d.scope or partition_of(d.scope, bb.partitions) != partition:
            raise InvalidArgument(
                f"dead letter {dlq_id!r} names no scope of partition {partition}"
            )
        entry_key = bb.scope(d.scope).keys.entry(d.entry)
        got = await run_script(bb.client, "redrive", [pk.dlq, pk.bus, entry_key],
                               [dlq_id, d.scope, d.entry])
        if not got:
            raise NotFound(f"no dead letter {dlq_id!r} in partition {partition}")
        bus_id = as_str(got[0])
        now = bb.now_ms()
        rec = {"at": now, "by": by, "action": "redrive", "partition": partition,
               "dlq_id": dlq_id, "bus_id": bus_id, "group": d.group, "scope": d.scope,
               "entry": d.entry, "reason": d.reason}
        aid = await bb.client.xadd(K.AUDIT, {k: str(v) for k, v in rec.items()},
                                   maxlen=AUDIT_MAXLEN, approximate=True)
        return AuditRecord(id=as_str(aid), at=now, by=by, action="redrive",
                           partition=partition, dlq_id=dlq_id, bus_id=bus_id, group=d.group,
                           scope=d.scope, entry=d.entry, reason=d.reason)

    async def audit(self, *, limit: int = 100) -> builtins.list[AuditRecord]:
        """The newest ``limit`` operator actions, newest first."""
        out = []
        for sid, raw in await self.bb.client.xrevrange(K.AUDIT, count=limit):
            f = {as_str(k): as_str(v) for k, v in raw.items()}
            out.append(AuditRecord(
                id=as_str(sid), at=int(f.get("at") or 0), by=f.get("by", ""),
                action=f.get("action", ""), partition=int(f.get("partition") or 0),
                dlq_id=f.get("dlq_id", ""), bus_id=f.get("bus_id", ""),
                group=f.get("group", ""), scope=f.get("scope", ""), entry=f.get("entry", ""),
                reason=f.get("reason", "")))
        return out
