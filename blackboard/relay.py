"""A partition's inbox and the relay that moves its content events to the partition bus.

Mutation scripts, run as the caller (a confined agent too), RPUSH ``<scope>|<id>|<version>``
to ``bb:{pN}:inbox``; they have no permission on the bus. :meth:`Inbox.relay` runs
``relay.lua`` as the service user: each item is checked against the entry it names, and the
bus event is built from the entry, so a forged or replayed item can never reach a worker as
anything but the entry's own current content, and at most once per content version.
:meth:`Inbox.wait` blocks until the inbox has an item (``BLMOVE`` into ``relaying``, so an
item taken by a relay that dies is relayed by the next one).
"""

from __future__ import annotations

from dataclasses import dataclass

from .board import Blackboard
from .keys import PartitionKeys
from .scripts import run_script

__all__ = ["Inbox", "RelayResult"]


@dataclass(frozen=True, slots=True)
class RelayResult:
    relayed: int
    dropped: int
    #: items still in the inbox (more than one call's limit arrived)
    left: int


class Inbox:
    """The inbox of one partition (service user)."""

    def __init__(self, bb: Blackboard, partition: int) -> None:
        self.bb = bb
        self.keys = PartitionKeys(partition)

    async def relay(self, limit: int = 1000) -> RelayResult:
        """Move up to ``limit`` items (and any taken by :meth:`wait`) to the bus."""
        k = self.keys
        relayed, dropped, left = await run_script(
            self.bb.client, "relay", [k.inbox, k.relaying, k.bus], [str(limit)]
        )
        return RelayResult(int(relayed), int(dropped), int(left))

    async def wait(self, timeout_s: float) -> bool:
        """Block until an item arrives (True) or ``timeout_s`` passes (False)."""
        k = self.keys
        got = await self.bb.client.blmove(k.inbox, k.relaying, timeout_s, "LEFT", "RIGHT")
        return got is not None

    async def pending(self) -> int:
        """Items waiting in the inbox (or taken and not yet relayed)."""
        async with self.bb.client.pipeline(transaction=False) as pipe:
            pipe.llen(self.keys.inbox)
            pipe.llen(self.keys.relaying)
            a, b = await pipe.execute()
        return int(a) + int(b)
