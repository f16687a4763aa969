"""The lease table as an operator sees it: who holds which partition of which role, and
whether that holder still beats (read-only; workers use :class:`workers.leases.LeaseTable`)."""

from __future__ import annotations

from dataclasses import dataclass

from blackboard import Blackboard

from .leases import LeaseSnapshot

__all__ = ["LeaseRow", "lease_rows", "read_leases"]


@dataclass(frozen=True, slots=True)
class LeaseRow:
    """One lease: ``beat_age_ms`` since its holder's process last beat (None: no beat
    recorded); ``live`` when that is within ``ttl_ms``."""

    role: str
    partition: int
    holder: str
    beat_age_ms: int | None
    live: bool


async def read_leases(bb: Blackboard) -> LeaseSnapshot:
    """One read of the lease table."""
    return LeaseSnapshot.of(bb.now_ms(), await bb.lease_table.read())


def lease_rows(snap: LeaseSnapshot, ttl_ms: int) -> list[LeaseRow]:
    rows = []
    for (role, p), holder in sorted(snap.holders.items()):
        beat = snap.beats.get((role, holder))
        age = None if beat is None else snap.now - beat
        rows.append(LeaseRow(role, p, holder, age, not snap.lapsed(role, p, ttl_ms)))
    return rows
