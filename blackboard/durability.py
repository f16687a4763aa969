"""Replication-aware acknowledgement of writes (``durability="replicated"``).

By default a write is acknowledged once the master applied it. Under "replicated" the
write's pipeline also sends ``WAIT <replicas> <timeout>`` (or, with ``wait_aof``,
``WAITAOF 1 <replicas> <timeout>``, Redis >= 7.2) on the same connection, right after the
script: WAIT counts the replicas that acknowledged this connection's writes, so it must
follow the write on its connection (a pipeline keeps both on one; on Redis Cluster both go
to the node serving the scope's slot). Fewer acknowledgements than asked raise
:class:`NotReplicated` after the write was applied: it stays, durable on the master.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import InvalidArgument, NotReplicated, ServerError
from .settings import ClientSettings

__all__ = ["Wait", "check_waitaof_supported"]


@dataclass(frozen=True, slots=True)
class Wait:
    """What a write waits for after it is applied."""

    replicas: int
    aof: bool
    timeout_ms: int

    @classmethod
    def of(cls, s: ClientSettings) -> Wait | None:
        """From client settings; None under the default local durability."""
        if not s.replicated:
            return None
        return cls(s.replicas_wanted, s.wait_aof, s.wait_timeout_ms)

    def queue(self, pipe: Any, client: Any, key: str) -> None:
        """Append the wait to ``pipe``, after the write on ``key``, for the same node."""
        kw: dict[str, Any] = {}
        if hasattr(client, "get_node_from_key"):  # Redis Cluster: the slot's master
            kw["target_nodes"] = client.get_node_from_key(key)
        if self.aof:
            pipe.execute_command("WAITAOF", 1, self.replicas, self.timeout_ms, **kw)
        else:
            pipe.execute_command("WAIT", self.replicas, self.timeout_ms, **kw)

    def check(self, reply: Any, what: str) -> None:
        """Raise unless ``reply`` (WAIT's or WAITAOF's) has the acknowledgements asked."""
        if isinstance(reply, Exception):
            if self.aof and "unknown command" in str(reply).lower():
                raise InvalidArgument(
                    "wait_aof needs WAITAOF, which this Redis does not have (Redis >= 7.2): "
                    f"{what} was written, durable on the master only"
                ) from reply
            raise reply
        if self.aof:
            local, replicas = int(reply[0]), int(reply[1])
            if local < 1 or replicas < self.replicas:
                raise NotReplicated(what, wanted=self.replicas, replicas=replicas,
                                    local=local, aof=True)
            return
        if int(reply) < self.replicas:
            raise NotReplicated(what, wanted=self.replicas, replicas=int(reply))


async def check_waitaof_supported(client: Any, settings: ClientSettings) -> None:
    """At connect: refuse ``wait_aof`` on a Redis without WAITAOF (before 7.2) in so many
    words, rather than failing the first write with an unknown-command error."""
    if not settings.wait_aof:
        return
    try:  # waits for nothing (0 local, 0 replicas, 0 ms): only whether Redis knows it
        await client.execute_command("WAITAOF", 0, 0, 0)
    except ServerError as exc:
        if "unknown command" not in str(exc).lower():
            raise
        raise InvalidArgument(
            "wait_aof (--wait-aof) needs WAITAOF, which this Redis does not support "
            "(it came with Redis 7.2): upgrade Redis, or use --wait-replicas N alone"
        ) from None
