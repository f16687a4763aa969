"""Settings of a blackboard client, read from ``BLACKBOARD_*`` environment variables."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from typing import Any

from .errors import InvalidArgument

__all__ = ["ClientSettings"]

ENV_PREFIX = "BLACKBOARD_"


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
    socket_timeout: float = 10.0
    connect_timeout: float = 5.0
    retries: int = 5
    max_connections: int = 128
    health_check_interval: float = 15.0
    cluster: bool | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.partitions <= 4096:
            raise InvalidArgument(f"partitions must be in 1..4096, got {self.partitions}")
        if self.max_entry_bytes < 1:
            raise InvalidArgument("max_entry_bytes must be positive")

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: Any) -> ClientSettings:
        """Settings from ``BLACKBOARD_<FIELD>`` variables, then ``overrides`` (non-None)."""
        env = dict(os.environ if env is None else env)
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(ENV_PREFIX + f.name.upper())
            if raw is None or raw == "":
                continue
            try:
                if f.name == "redis_url":
                    values[f.name] = raw
                elif f.name == "cluster":
                    values[f.name] = raw.lower() in ("1", "true", "yes")
                elif f.type in ("int",):
                    values[f.name] = int(raw)
                else:
                    values[f.name] = float(raw)
            except ValueError:
                raise InvalidArgument(
                    f"environment variable {ENV_PREFIX}{f.name.upper()}={raw!r} is not valid"
                ) from None
        settings = cls(**values)
        return replace(settings, **{k: v for k, v in overrides.items() if v is not None})
