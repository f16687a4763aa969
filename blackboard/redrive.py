"""Re-driving dead letters: put a dead-lettered event back on its partition bus, once, and
record who did it in the audit stream.

A dead letter (``dlq.lua``) keeps the event's scope, type, entry, version and time, the
group that failed on it and why. Re-driving appends that event to the bus again (a new
stream id; the tags are read from the entry, as the relay builds them, ``[]`` when the entry
is gone) and deletes the dead letter, in one transaction watched on the DLQ, so two
operators clicking at once re-drive it once. Every consumer group reads the new bus event,
not only the one that failed: the bus has no per-group delivery. The audit record goes to
``bb:audit`` (a stream in its own slot, so it is written after the transaction).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from redis import exceptions as rexc

from . import keys as K
from .errors import InvalidArgument, NotFound
from .keys import PartitionKeys

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["AUDIT_MAXLEN", "AuditRecord", "DeadLetter", "audit_log", "audit_stream",
           "dead_letters", "redrive"]

#: Audit records kept (approximate trim): re-drives are rare operator actions.
AUDIT_MAXLEN = 10_000
_RETRIES = 5


def audit_stream() -> str:
    """The stream of operator actions: ``bb:audit``."""
    return f"{K.ROOT}:audit"


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One dead-lettered event (``id`` its DLQ stream id, ``dead_at`` ms from that id)."""

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


def _dead_letter(partition: int, sid: str, f: dict[str, str]) -> DeadLetter:
    return DeadLetter(
        partition=partition, id=sid, group=f.get("group", ""), event_id=f.get("event_id", ""),
        deliveries=int(f.get("deliveries") or 0), reason=f.get("reason", ""),
        scope=f.get("scope", ""), type=f.get("type", ""), entry=f.get("entry", ""),
        version=int(f.get("version") or 0), at=int(f.get("at") or 0),
        dead_at=int(sid.partition("-")[0] or 0),
    )


async def dead_letters(bb: Blackboard, *, limit: int = 100,
                       partition: int | None = None) -> list[DeadLetter]:
    """The newest ``limit`` dead letters of one partition or of all, newest first."""
    if limit < 1:
        raise InvalidArgument(f"limit must be >= 1 (got {limit})")
    parts = range(bb.partitions) if partition is None else [_check_partition(bb, partition)]
    out: list[DeadLetter] = []
    for p in parts:
        out += [_dead_letter(p, sid, f) for sid, f in await bb.dlq(p, count=limit)]
    out.sort(key=lambda d: d.dead_at, reverse=True)
    return out[:limit]


def _check_partition(bb: Blackboard, partition: int) -> int:
    if not 0 <= partition < bb.partitions:
        raise InvalidArgument(f"partition must be in [0, {bb.partitions}) (got {partition})")
    return partition


def _text(v: Any) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


async def _tags_of(bb: Blackboard, scope: str, entry: str) -> str:
    try:
        e = await bb.scope(scope).get(entry)
    except (NotFound, InvalidArgument):
        return "[]"
    return json.dumps(sorted(e.tags))


async def redrive(bb: Blackboard, partition: int, dlq_id: str, *, by: str) -> AuditRecord:
    """Put dead letter ``dlq_id`` of ``partition`` back on the bus and audit it as ``by``;
    NotFound when there is no such dead letter (also when another operator re-drove it)."""
    pk = PartitionKeys(_check_partition(bb, partition))
    for _ in range(_RETRIES):
        async with bb.client.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(pk.dlq)
                rows = await pipe.xrange(pk.dlq, dlq_id, dlq_id)
                if not rows:
                    raise NotFound(f"no dead letter {dlq_id!r} in partition {partition}")
                f = {_text(k): _text(v) for k, v in rows[0][1].items()}
                d = _dead_letter(partition, dlq_id, f)
                tags = await _tags_of(bb, d.scope, d.entry)
                pipe.multi()
                pipe.xadd(pk.bus, {"scope": d.scope, "type": d.type, "entry": d.entry,
                                   "version": str(d.version), "tags": tags, "at": str(d.at)})
                pipe.xdel(pk.dlq, dlq_id)
                bus_id, _ = await pipe.execute()
            except rexc.WatchError:
                continue
        now = bb.now_ms()
        rec = {"at": now, "by": by, "action": "redrive", "partition": partition,
               "dlq_id": dlq_id, "bus_id": _text(bus_id), "group": d.group, "scope": d.scope,
               "entry": d.entry, "reason": d.reason}
        aid = await bb.client.xadd(audit_stream(), {k: str(v) for k, v in rec.items()},
                                   maxlen=AUDIT_MAXLEN, approximate=True)
        return AuditRecord(id=_text(aid), at=now, by=by, action="redrive", partition=partition,
                           dlq_id=dlq_id, bus_id=_text(bus_id), group=d.group, scope=d.scope,
                           entry=d.entry, reason=d.reason)
    raise NotFound(f"dead letter {dlq_id!r} kept changing; try again")


async def audit_log(bb: Blackboard, *, limit: int = 100) -> list[AuditRecord]:
    """The newest ``limit`` operator actions, newest first."""
    out = []
    for sid, raw in await bb.client.xrevrange(audit_stream(), count=limit):
        f = {_text(k): _text(v) for k, v in raw.items()}
        out.append(AuditRecord(
            id=_text(sid), at=int(f.get("at") or 0), by=f.get("by", ""),
            action=f.get("action", ""), partition=int(f.get("partition") or 0),
            dlq_id=f.get("dlq_id", ""), bus_id=f.get("bus_id", ""), group=f.get("group", ""),
            scope=f.get("scope", ""), entry=f.get("entry", ""), reason=f.get("reason", "")))
    return out
