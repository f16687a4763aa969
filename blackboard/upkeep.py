"""One partition's upkeep: its scope set, its ttl and prune schedules, the scripts that
expire, prune and reschedule a scope, and trimming its bus behind the slowest group.

:class:`Upkeep` is what ``Blackboard.sweep`` / ``Blackboard.trim`` and the maintenance role
run per partition; a scope an agent damaged with raw commands is skipped (logged, counted
in ``bb.damaged_scopes_skipped``) so the partition's other scopes are still kept.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import InvalidArgument
from .keys import PartitionKeys
from .redis_errors import ERROR_REPLIES
from .scripts import run_script

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["SweepReport", "TrimReport", "Upkeep"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SweepReport:
    """What a TTL sweep removed (or, in a dry run, would remove): scope -> count."""

    expired: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False

    @property
    def total(self) -> int:
        return sum(self.expired.values())


@dataclass(frozen=True, slots=True)
class TrimReport:
    """Per partition: events trimmed from the bus (or trimmable, in a dry run)."""

    trimmed: dict[int, int] = field(default_factory=dict)
    dry_run: bool = False
    #: per partition: retired entries deleted because every edge has consolidated them
    reaped: dict[int, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.trimmed.values())


def _flag(dry_run: bool) -> str:
    return "1" if dry_run else "0"


class Upkeep:
    """Maintenance of partition ``partition``; cheap to build (nothing is sent)."""

    def __init__(self, bb: Blackboard, partition: int) -> None:
        self.bb, self.partition = bb, partition
        self._k = PartitionKeys(partition)

    async def scope_ids(self) -> list[str]:
        """Scope ids that ever held an entry here, sorted (unvalidated: an agent may SADD
        junk to the set)."""
        return sorted(m.decode("utf-8", "replace") for m in
                      await self.bb.client.smembers(self._k.scopes))

    async def prune_due(self, now_ms: int) -> list[str]:
        """Scopes whose weakest entry's decayed strength crossed the threshold by ``now_ms``."""
        due = await self.bb.client.zrangebyscore(self._k.prune, "-inf", now_ms)
        return [d.decode() for d in due]

    async def reschedule(self, scope_id: str, dry_run: bool = False) -> int:
        """``reschedule.lua``: put the scope back in the ttl / prune schedules where its own
        indexes say it is due; -> places changed."""
        sk = self.bb.scope_keys(scope_id)
        ttl, prune = await run_script(
            self.bb.client, "reschedule", sk.script_keys(), [scope_id, _flag(dry_run)]
        )
        return int(ttl) + int(prune)

    async def prune(
        self, scope_id: str, mode: str, limit: int, dry_run: bool, job: str
    ) -> tuple[int, int] | None:
        """``prune.lua`` on one scope (``mode`` "decay" or "capacity"), at most ``limit``
        entries: -> (removed, due); None when the scope is damaged (skipped, logged)."""
        sk = self.bb.scope_keys(scope_id)
        try:
            removed, due = await run_script(
                self.bb.client, "prune", sk.script_keys(),
                [scope_id, mode, str(limit), _flag(dry_run)],
            )
        except ERROR_REPLIES as exc:
            log.warning("%s: scope %s skipped: %s (blackboard check --repair)",
                        job, scope_id, exc)
            self.bb.damaged_scopes_skipped += 1
            return None
        return int(removed), int(due)

    async def sweep(self, limit: int, dry_run: bool) -> dict[str, int]:
        """Expire due entries of the partition's scopes (found through the ttl zset, so the
        cost is O(expired)); -> scope -> removed (or, dry, expirable)."""
        out: dict[str, int] = {}
        due = await self.bb.client.zrangebyscore(self._k.ttl, "-inf", self.bb.now_ms())
        for raw in due:
            scope_id = raw.decode("utf-8", "replace")
            try:
                sk = self.bb.scope_keys(scope_id)
            except InvalidArgument:
                # junk a confined agent may ZADD into the schedule: drop it, go on
                log.warning("sweep: dropping invalid scope id %r from partition %d's "
                            "ttl schedule", raw[:80], self.partition)
                self.bb.dropped_schedule_members += 1
                await self.bb.client.zrem(self._k.ttl, raw)
                continue
            total = 0
            while True:
                try:
                    removed, pending = await run_script(
                        self.bb.client, "expire", sk.script_keys(),
                        [scope_id, str(limit), _flag(dry_run)],
                    )
                except ERROR_REPLIES as exc:
                    # A scope its agent damaged with raw commands (the script refused
                    # whole): the other scopes' sweep goes on.
                    log.warning("sweep: scope %s skipped: %s (blackboard check --repair)",
                                scope_id, exc)
                    self.bb.damaged_scopes_skipped += 1
                    break
                total += int(pending) if dry_run else int(removed)
                if dry_run or int(removed) < limit:
                    break
            if total:
                out[scope_id] = total
        return out

    async def trim(self, dry_run: bool) -> tuple[int | None, int | None]:
        """Trim the bus behind its slowest consumer group (a bus without groups is kept)
        and write the flowmark beside it: the lowest bus id some group has not taken in
        (acked). Retired entries whose last event is below it and that no buffer holds are
        reaped. -> (events trimmed or trimmable, entries reaped); None where nothing ran."""
        bus = self.bb.bus(self.partition)
        groups = await bus.groups()
        if not groups:
            if not dry_run:
                await self.bb.client.delete(self._k.flowmark)  # nobody consumed: hold all
            return None, None
        floor: tuple[int, int] | None = None
        # mark: the lowest id some group has not taken in (acked); everything below it
        # went through every group's buffer.lua, so the dataflow holds what it needs.
        mark: tuple[int, int] | None = None
        for g in groups:
            point = _sid(g.last_delivered)
            taken = (point[0], point[1] + 1)
            if g.pending:
                low = await bus.oldest_pending(g.role)
                # Acked between XINFO and XPENDING: nothing pending holds the group back.
                if low is not None:
                    point = min(point, _sid(low))
                    taken = min(taken, _sid(low))
            floor = point if floor is None else min(floor, point)
            mark = taken if mark is None else min(mark, taken)
        floor = floor or (0, 0)
        reaped = None
        if not dry_run and mark is not None:
            await self.bb.client.set(self._k.flowmark, f"{mark[0]}-{mark[1]}")
            reaped = await self.reap()
        if floor == (0, 0):
            return None, reaped
        minid = f"{floor[0]}-{floor[1]}"
        if dry_run:
            return await bus.count_before(minid), reaped
        return await bus.trim_to(minid), reaped

    async def reap(self, count: int = 500) -> int:
        """Delete the partition's retired entries that nothing needs any more."""
        cursor, total = "0", 0
        while True:
            cursor_b, n, _held = await run_script(
                self.bb.client, "reap", [self._k.retired], [cursor, str(count)]
            )
            total += int(n)
            cursor = cursor_b.decode() if isinstance(cursor_b, bytes) else str(cursor_b)
            if cursor == "0":
                return total


def _sid(s: str) -> tuple[int, int]:
    ms, _, seq = s.partition("-")
    return int(ms), int(seq or 0)
