"""Settings of a blackboard client, read from ``BLACKBOARD_*`` environment variables."""

from __future__ import annotations

import os
import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import InvalidArgument

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["ClientSettings", "env_values", "settings_from_env"]

S = TypeVar("S", bound="DataclassInstance")

ENV_PREFIX = "BLACKBOARD_"


def _scalar(tp: Any) -> Any:
    """``int`` of ``int | None`` (the settings' only unions are optionals)."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return args[0] if args else tp


def env_values(cls: type, prefix: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Values for the fields of dataclass ``cls`` from ``<prefix><FIELD>`` variables,
    converted by each field's annotation (str, int, float, bool, or an optional of them).
    Empty variables are ignored; a value that does not convert raises InvalidArgument."""
    src = os.environ if env is None else env
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in fields(cls):
        name = prefix + f.name.upper()
        raw = src.get(name)
        if not raw:
            continue
        tp = _scalar(hints[f.name])
        try:
            if tp is bool:
                values[f.name] = raw.strip().lower() in ("1", "true", "yes", "on")
            elif tp in (int, float):
                values[f.name] = tp(raw)
            else:
                values[f.name] = raw
        except ValueError:
            raise InvalidArgument(
                f"environment variable {name}={raw!r} is not a valid {tp.__name__}"
            ) from None
    return values


def settings_from_env(cls: type[S], prefix: str, env: Mapping[str, str] | None,
                      overrides: Mapping[str, Any]) -> S:
    """Dataclass ``cls`` from ``<prefix><FIELD>`` variables (:func:`env_values`), then
    ``overrides`` (those not None: an unset command-line option keeps the variable's)."""
    settings = cls(**env_values(cls, prefix, env))
    return replace(settings, **{k: v for k, v in overrides.items() if v is not None})


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """How a process talks to Redis. Times are seconds.

    ``redis_url`` may be ``None``: then the caller decides (the CLI starts an embedded
    server). ``partitions`` is pinned in Redis at first use; ``cluster`` ``None`` means
    detect it from the server.
    """

    redis_url: str | None = None
    partitions: int = 16
    max_entry_bytes: int = 1 << 20
    #: Also the ceiling of a blocking read (XREADGROUP/BLMOVE): see :attr:`max_block_ms`.
    socket_timeout: float = 30.0
    connect_timeout: float = 5.0
    retries: int = 5
    #: Connections for short commands. Long blocking holders (a consumer's reader, the
    #: relay) add theirs on top (:meth:`Blackboard.reserve_connections`), so the pool is
    #: sized from what the process runs; a command finding none free waits for one for up
    #: to ``pool_timeout`` seconds instead of failing at once.
    max_connections: int = 64
    pool_timeout: float = 20.0
    #: Longer than a blocking read, so a reader's connection is not PINGed before each one.
    health_check_interval: float = 60.0
    cluster: bool | None = None
    #: "local" (default): a write is acknowledged once the master applied it.
    #: "replicated": also once ``wait_replicas`` replicas have it (``WAIT``, at least 1)
    #: and, with ``wait_aof``, once it is fsynced to the AOF (``WAITAOF``, Redis >= 7.2),
    #: within ``wait_timeout_ms``; else the write raises ``NotReplicated`` (it stays).
    durability: str = "local"
    wait_replicas: int = 0
    wait_aof: bool = False
    wait_timeout_ms: int = 2000
    #: OpenTelemetry traces (``BLACKBOARD_TRACING=1``; the ``[otel]`` extra): turned on for
    #: the process at connect, exported as the standard ``OTEL_*`` variables say
    #: (:mod:`blackboard.tracing`).
    tracing: bool = False

    def __post_init__(self) -> None:
        if self.durability not in ("local", "replicated"):
            raise InvalidArgument(
                f"durability must be 'local' or 'replicated', got {self.durability!r}")
        if self.wait_replicas < 0 or self.wait_timeout_ms < 1:
            raise InvalidArgument("wait_replicas must be >= 0 and wait_timeout_ms >= 1")
        if not 1 <= self.partitions <= 4096:
            raise InvalidArgument(f"partitions must be in 1..4096, got {self.partitions}")
        if self.max_entry_bytes < 1:
            raise InvalidArgument("max_entry_bytes must be positive")
        if self.socket_timeout <= 0:
            raise InvalidArgument("socket_timeout must be positive")
        if self.max_connections < 1 or self.pool_timeout <= 0:
            raise InvalidArgument("max_connections and pool_timeout must be positive")

    @property
    def max_block_ms(self) -> int:
        """The longest a blocking read may block: the socket timeout less a margin for the
        reply to arrive (2 s, or half of a short timeout), else the read fails with a
        timeout instead of returning empty."""
        ms = int(self.socket_timeout * 1000)
        return max(1, ms - min(2_000, ms // 2))

    @property
    def replicated(self) -> bool:
        """Whether writes wait for replicas or the AOF (``--wait-replicas``/``--wait-aof``
        imply it)."""
        return self.durability == "replicated" or self.wait_replicas > 0 or self.wait_aof

    @property
    def replicas_wanted(self) -> int:
        """Replicas a write waits for: ``wait_replicas``, at least 1 under "replicated"
        unless only the local AOF fsync was asked."""
        if self.wait_replicas > 0:
            return self.wait_replicas
        return 1 if self.durability == "replicated" else 0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> ClientSettings:
        """Settings from ``BLACKBOARD_<FIELD>`` variables, then ``overrides`` (non-None)."""
        return settings_from_env(cls, ENV_PREFIX, env, overrides)
