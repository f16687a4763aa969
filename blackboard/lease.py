"""Leases: a key held under a token (:class:`Lease`, ``lease.lua``) and the lease table of
every role's partition leases (:class:`LeaseTable`, ``bb:leases``, ``lease_table.lua``).

The table's field grammar lives here and nowhere else: ``h:<role>:<p>`` -> holder,
``w:<role>:<holder>`` -> the holder's process, ``b:<process>`` -> that process's last beat
(ms, Redis clock). A lease lasts while its holder's process beats, so one HSET of the beat
renews every lease of a process; the policy of who takes what is the workers'.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import keys as K
from .errors import InvalidArgument, ScriptMissing
from .scripts import SCRIPTS, load_script, run_script

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["Lease", "LeaseRows", "LeaseTable"]

log = logging.getLogger(__name__)


class Lease:
    """One key held by one token for ``ttl_ms`` at a time (e.g. a periodic job's run).

    ``key`` is under ``bb:lease:`` (``lease.lua`` runs over maxmemory, so it touches no
    other key)."""

    def __init__(self, bb: Blackboard, key: str) -> None:
        if not key.startswith(f"{K.ROOT}:lease:"):
            raise InvalidArgument(f"a lease key is under {K.ROOT}:lease:, not {key!r:.80}")
        self.bb, self.key = bb, key

    async def _op(self, op: str, token: str, ttl_ms: int) -> bool:
        return bool(await run_script(self.bb.client, "lease", [self.key], [op, token, str(ttl_ms)]))

    async def acquire(self, token: str, ttl_ms: int) -> bool:
        """Take (or extend, when ``token`` holds it) the lease; False when another holds it."""
        return await self._op("acquire", token, ttl_ms)

    async def release(self, token: str) -> bool:
        """Give the lease up if ``token`` holds it."""
        return await self._op("release", token, 0)


@dataclass(frozen=True, slots=True)
class LeaseRows:
    """The lease table as one read saw it, parsed (malformed fields skipped, logged)."""

    #: (role, partition) -> holder
    holders: dict[tuple[str, int], str] = field(default_factory=dict)
    #: (role, holder) -> the holder's process
    processes: dict[tuple[str, str], str] = field(default_factory=dict)
    #: process -> its last beat (ms, Redis clock)
    beats: dict[str, int] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: dict[bytes, bytes]) -> LeaseRows:
        rows = cls()
        for k, v in raw.items():
            kind, _, rest = k.decode("utf-8", "replace").partition(":")
            role, _, name = rest.partition(":")
            try:
                if kind == "h":
                    rows.holders[(role, int(name))] = v.decode()
                elif kind == "w":
                    rows.processes[(role, name)] = v.decode()
                elif kind == "b":
                    rows.beats[rest] = int(v)
            except ValueError:
                log.warning("skipping a malformed lease table field %r", k[:80])
        return rows


class LeaseTable:
    """``bb:leases``: every role's partition leases and their holders' beats."""

    def __init__(self, bb: Blackboard) -> None:
        self.bb = bb
        self.key = K.lease_table()

    async def beat_and_read(
        self, process: str | None, now: int, joined: Iterable[tuple[str, str]] = ()
    ) -> LeaseRows:
        """Write ``process``'s beat (None: no beat) with the process field of each newly
        ``joined`` (role, holder), then read the table: one round trip."""
        flat: list[str] = []
        if process is not None:
            mapping: dict[str, str | int] = {f"w:{r}:{h}": process for r, h in joined}
            flat = [str(x) for kv in (mapping | {f"b:{process}": now}).items() for x in kv]
        beat = SCRIPTS["beat"]
        for attempt in (0, 1):
            async with self.bb.client.pipeline(transaction=False) as pipe:
                if flat:
                    # beat.lua: allowed while Redis is over maxmemory (leases are kept while
                    # a worker waits for memory)
                    pipe.execute_command("EVALSHA", beat.sha, 1, self.key, "hset", "", *flat)
                pipe.hgetall(self.key)
                replies = await pipe.execute(raise_on_error=False)
            if attempt == 0 and isinstance(replies[0], ScriptMissing):
                await load_script(self.bb.client, "beat")
                continue
            for r in replies:
                if isinstance(r, Exception):
                    raise r
            break
        return LeaseRows.parse(replies[-1])

    async def read(self) -> LeaseRows:
        """The table as it is now (no beat written)."""
        return LeaseRows.parse(await self.bb.client.hgetall(self.key))

    async def forget(
        self, holders: Iterable[tuple[str, str]] = (), processes: Iterable[str] = ()
    ) -> None:
        """Remove the process fields of ``holders`` and the beats of ``processes`` (their
        leases lapse at once)."""
        fields = [f"w:{r}:{h}" for r, h in holders] + [f"b:{p}" for p in processes]
        if fields:
            await self.bb.client.hdel(self.key, *fields)

    async def _op(self, op: str, role: str, partition: int, holder: str, ttl_ms: int) -> bool:
        args = [op, role, str(partition), holder, str(self.bb.now_ms()), str(ttl_ms)]
        return bool(await run_script(self.bb.client, "lease_table", [self.key], args))

    async def acquire(self, role: str, partition: int, holder: str, ttl_ms: int) -> bool:
        """Take the lease unless a holder whose process beat within ``ttl_ms`` has it."""
        return await self._op("acquire", role, partition, holder, ttl_ms)

    async def release(self, role: str, partition: int, holder: str, ttl_ms: int) -> bool:
        """Give the lease up if ``holder`` has it."""
        return await self._op("release", role, partition, holder, ttl_ms)
