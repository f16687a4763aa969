"""A partition's inbox, and the relay that moves its content events to the partition bus.

Mutation scripts, run as the caller (a confined agent too), RPUSH ``<scope>|<id>|<version>``
to ``bb:{pN}:inbox``; they have no permission on the bus. :meth:`Inbox.relay` runs
``relay.lua`` as the service user: each item is checked against the entry it names and the
bus event is built from the entry, so a forged or replayed item can never reach a worker as
anything but the entry's own current content, and at most once per content version.

:class:`Relays` keeps one relay loop per partition per process, for as long as any consumer
of this process reads that partition's bus (:mod:`blackboard.consumer` acquires and releases
them): whoever consumes a bus also fills it, and six roles reading one partition share one
loop. A loop relays what is there, then blocks on the inbox (a ``BLMOVE`` of the inbox onto
itself, which leaves every item in place, so a wait whose reply is lost loses nothing);
idle, it costs one command per ``block_s``. A failed round is logged, counted and retried
after a backoff; one that Redis refused for want of memory (over ``maxmemory``) leaves
every item where it was.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import tracing
from .errors import OutOfMemory
from .keys import PartitionKeys
from .scripts import run_script
from .tasks import cancel_and_wait

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["Inbox", "RelayCounters", "RelayResult", "Relays"]

log = logging.getLogger(__name__)

#: While Redis is over its maxmemory, a relay loop says so once per this many seconds.
OOM_SAY_EVERY_S = 30.0


@dataclass(frozen=True, slots=True)
class RelayResult:
    relayed: int
    #: versions already relayed: an update collapsed into a newer one, or a replay
    stale: int
    #: no such entry here, a version it never had, malformed: forged, or a bug
    invalid: int
    #: items still in the inbox (more than one call's limit arrived)
    left: int

    @property
    def dropped(self) -> int:
        return self.stale + self.invalid


@dataclass
class RelayCounters:
    relayed: int = 0
    stale: int = 0
    invalid: int = 0
    errors: int = 0


class Inbox:
    """The inbox of one partition (service user)."""

    def __init__(self, bb: Blackboard, partition: int) -> None:
        self.bb = bb
        self.keys = PartitionKeys(partition)

    async def relay(self, limit: int = 1000) -> RelayResult:
        """Move up to ``limit`` items (and any taken by :meth:`wait`) to the bus."""
        k = self.keys
        start = time.time_ns()
        reply = await run_script(
            self.bb.client, "relay", [k.inbox, k.relaying, k.bus], [str(limit)]
        )
        if reply[4] and tracing.ENABLED:
            # One span per traced event moved, in its write's trace, over this call.
            tracing.record("blackboard.relay", reply[4], start, time.time_ns(),
                           {"blackboard.partition": self.keys.partition})
        return RelayResult(*(int(x) for x in reply[:4]))

    async def wait(self, timeout_s: float) -> bool:
        """Block until an item arrives (True) or ``timeout_s`` passes (False); the item
        stays in the inbox.

        ``BLMOVE inbox inbox RIGHT RIGHT`` takes the last item and puts it back where it
        was: a wait that changes nothing. It used to move the item into ``relaying``; when
        the connection died after Redis moved it but before the reply came, redis-py ran
        the wait again, which blocked on an empty inbox, and the item sat in ``relaying``
        until the partition's next write came (or forever, if none did)."""
        k = self.keys
        got = await self.bb.client.blmove(k.inbox, k.inbox, timeout_s, "RIGHT", "RIGHT")
        return got is not None

    async def pending(self) -> int:
        """Items waiting in the inbox (or taken and not yet relayed)."""
        async with self.bb.client.pipeline(transaction=False) as pipe:
            pipe.llen(self.keys.inbox)
            pipe.llen(self.keys.relaying)
            a, b = await pipe.execute()
        return int(a) + int(b)


class Relays:
    """The relay loops of one process, one per partition some consumer here reads."""

    def __init__(self, bb: Blackboard, *, batch: int = 1000, block_s: float = 10.0) -> None:
        # 10 s, not as long as a read may block (28 s): a relay task whose cancellation
        # redis-py swallows mid-BLMOVE (one started while its process shuts down) then
        # holds the process that long (test_kill_9_mid_batch_loses_nothing: 2 of 6 runs
        # past 30 s with 28 s). Each wake-up of an idle relay is a command: 16 partitions
        # at 10 s are 1.6 commands/s.
        self.bb, self.batch, self.block_s = bb, batch, block_s
        self.counters = RelayCounters()
        self._users: dict[int, int] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._retiring: set[asyncio.Task[None]] = set()

    def acquire(self, partition: int) -> None:
        """A consumer reads ``partition``: make sure its inbox is relayed."""
        self._users[partition] = self._users.get(partition, 0) + 1
        task = self._tasks.get(partition)
        if task is None or task.done():
            self._tasks[partition] = asyncio.create_task(
                self._loop(partition), name=f"relay-p{partition}"
            )

    def release(self, partition: int) -> None:
        """A consumer stopped reading ``partition``; the last one stops its relay."""
        n = self._users.get(partition, 0) - 1
        if n > 0:
            self._users[partition] = n
            return
        self._users.pop(partition, None)
        task = self._tasks.pop(partition, None)
        if task is not None:
            task.cancel()  # and the loop sees it is no longer the partition's
            self._retiring.add(task)
            task.add_done_callback(self._retiring.discard)

    async def relay_all(self, partitions: Iterable[int] | None = None) -> dict[int, RelayResult]:
        """Relay every waiting inbox item of ``partitions`` (all by default) now, once: what
        a worker's relay loop does continuously (the CLI, tests, a consumer-less tool)."""
        out: dict[int, RelayResult] = {}
        for p in partitions if partitions is not None else range(self.bb.partitions):
            inbox, total = Inbox(self.bb, p), [0, 0, 0]
            while True:
                r = await inbox.relay()
                total = [total[0] + r.relayed, total[1] + r.stale, total[2] + r.invalid]
                if r.left == 0:
                    break
            if any(total):
                out[p] = RelayResult(total[0], total[1], total[2], 0)
        return out

    async def close(self) -> None:
        tasks = [*self._tasks.values(), *self._retiring]
        self._tasks.clear()
        self._users.clear()
        await cancel_and_wait(tasks)

    async def _loop(self, p: int) -> None:
        inbox = Inbox(self.bb, p)
        backoff = 0.1
        said_oom = -OOM_SAY_EVERY_S
        self.bb.reserve_connections(1)  # the BLMOVE holds one for itself
        me = asyncio.current_task()
        try:
            while self._tasks.get(p) is me:
                try:
                    r = await inbox.relay(self.batch)
                    self.counters.relayed += r.relayed
                    self.counters.stale += r.stale
                    if r.invalid:
                        self.counters.invalid += r.invalid
                        log.warning("relay p%d: dropped %d inbox items naming no entry or "
                                    "a version it never had (forged?)", p, r.invalid)
                    if r.left == 0:
                        # Block again while nothing arrives: an idle relay then costs one
                        # command per block, not a relay round after each.
                        while self._tasks.get(p) is me and not await inbox.wait(self.block_s):
                            pass
                    backoff = 0.1
                except asyncio.CancelledError:
                    raise
                except OutOfMemory:
                    # Refused whole: the items stay in the inbox until memory is freed.
                    self.counters.errors += 1
                    if time.monotonic() >= said_oom + OOM_SAY_EVERY_S:
                        said_oom = time.monotonic()
                        log.warning("relay p%d: Redis is over its maxmemory; the inbox is "
                                    "kept and relayed once memory is freed", p)
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 5.0)
                except Exception:
                    self.counters.errors += 1
                    log.exception("relay p%d failed; retrying in %.1fs", p, backoff)
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 5.0)
        finally:
            self.bb.reserve_connections(-1)

