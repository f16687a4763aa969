"""One partition's dataflow buffers: what the consolidating workers buffer, fire and trim.

A buffer is a list ``bb:{pN}:pending:<edge>:<target>`` of source references; the set
``pendings`` names the non-empty ones and the hash ``inflight`` the size of the batch each is
transforming (a replay after a crash takes the same items). :class:`PendingBuffer` owns
those keys and the scripts that change them together (``buffer.lua``, ``pending_head.lua``,
``pending_take.lua``, ``edge_drop.lua``), so the workers and the edge registry never build a
buffer key nor run a script by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .keys import PartitionKeys
from .scripts import run_script

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["BufferState", "PendingBuffer", "buffer_lengths"]


@dataclass(frozen=True, slots=True)
class BufferState:
    """One buffer as a fire check reads it, with the partition's edges version (raw: the
    registry owns its format) read in the same round trip."""

    size: int
    head: bytes | None
    inflight: bool
    edges_version: bytes | None


class PendingBuffer:
    """The dataflow buffers of partition ``partition``; cheap to build (nothing is sent)."""

    def __init__(self, bb: Blackboard, partition: int) -> None:
        self.bb, self.partition = bb, partition
        self._k = PartitionKeys(partition)
        self._prefix = f"{self._k.base}:pending:"

    def key(self, edge_id: str, target: str) -> str:
        """The buffer of ``edge_id`` for ``target`` (edge ids hold no ':')."""
        return self._k.pending(edge_id, target)

    def parse(self, key: str) -> tuple[str, str]:
        """(edge id, target scope) of a buffer key of this partition."""
        edge, _, target = key[len(self._prefix) :].partition(":")
        return edge, target

    async def keys(self) -> list[str]:
        """The non-empty buffers (and ones a crash left in flight)."""
        return [k.decode() for k in await self.bb.client.smembers(self._k.pendings)]

    async def append(self, buffer_keys: Sequence[str], args: Sequence[str]) -> tuple[int, Any]:
        """``buffer.lua``: append the matched items to ``buffer_keys`` and ack the batch.
        -> (items appended, events skipped) or (-1, the current edges version) when the
        batch was matched under an older edges version (see the script's header)."""
        appended, second = await run_script(
            self.bb.client, "buffer", [self._k.bus, self._k.pendings, *buffer_keys], list(args)
        )
        return int(appended), second

    async def state(self, key: str) -> BufferState:
        """Size, head item and in-flight flag of ``key``, and the edges version: one trip."""
        async with self.bb.client.pipeline(transaction=False) as pipe:
            pipe.llen(key)
            pipe.lindex(key, 0)
            pipe.hexists(self._k.inflight, key)
            pipe.get(self._k.edges_version)
            size, head, inflight, version = await pipe.execute()
        return BufferState(int(size), head, bool(inflight), version)

    async def heads(self, keys: Sequence[str]) -> list[bytes | None]:
        """The head (oldest) item of each buffer, in one round trip."""
        async with self.bb.client.pipeline(transaction=False) as pipe:
            for k in keys:
                pipe.lindex(k, 0)
            return list(await pipe.execute())

    async def head(self, key: str, limit: int) -> list[bytes]:
        """``pending_head.lua``: fix the batch to transform (at most ``limit`` items, or the
        one already in flight) before the transformer runs, and return its items."""
        return list(await run_script(
            self.bb.client, "pending_head", [key, self._k.inflight], [str(limit)]
        ) or [])

    async def take(
        self,
        key: str,
        batch: Sequence[bytes],
        mode: str,
        reason: str,
        edge_id: str,
        target: str,
        dlq_maxlen: int,
    ) -> None:
        """``pending_take.lua``: remove the in-flight ``batch`` from the buffer head; with
        ``mode`` "dlq" its items go to the partition's DLQ with ``reason``."""
        await run_script(
            self.bb.client,
            "pending_take",
            [key, self._k.dlq, self._k.pendings, self._k.inflight],
            [mode, str(len(batch)), batch[0], batch[-1], reason, edge_id, target,
             str(dlq_maxlen)],
        )

    async def drop_edge(self, edge_id: str) -> tuple[int, int]:
        """``edge_drop.lua``: delete every buffer and in-flight batch of ``edge_id``.
        -> (buffers, items) dropped."""
        r = await run_script(
            self.bb.client, "edge_drop", [self._k.pendings, self._k.inflight], [edge_id]
        )
        return int(r[0]), int(r[1])

    async def backlog(self) -> int:
        """Non-empty buffers plus batches in flight: zero when the dataflow is drained."""
        async with self.bb.client.pipeline(transaction=False) as pipe:
            pipe.scard(self._k.pendings)
            pipe.hlen(self._k.inflight)
            n, inflight = await pipe.execute()
        return int(n) + int(inflight)


async def buffer_lengths(bb: Blackboard, buffers: Sequence[tuple[int, str, str]]) -> list[int]:
    """Items in the buffer of each (partition, edge id, target), in order, in one round trip
    whatever the partitions (a pipeline, which a cluster client splits by slot): the memory
    map shows them on its edges, and a round trip per partition cost it more than the
    lengths themselves."""
    if not buffers:
        return []
    async with bb.client.pipeline(transaction=False) as pipe:
        for partition, edge_id, target in buffers:
            pipe.llen(PartitionKeys(partition).pending(edge_id, target))
        return [int(n) for n in await pipe.execute()]
