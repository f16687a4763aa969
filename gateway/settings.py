"""Gateway settings, from ``BLACKBOARD_GATEWAY_*`` environment variables or arguments."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from typing import Any

from blackboard import InvalidArgument

__all__ = ["ENV_PREFIX", "GatewaySettings"]

ENV_PREFIX = "BLACKBOARD_GATEWAY_"


@dataclass(frozen=True, slots=True)
class GatewaySettings:
    """``redis_url``: where the memory is (no credentials needed: each request logs in
    with its token's Redis user). ``service_url``: a connection for the gateway's own
    bookkeeping only (the per-user rate buckets, readiness, the edge records an agent's
    map binds to its readable scopes: :mod:`gateway.maps`) — never used to serve memory;
    empty: ``redis_url``. ``rate`` requests per second per Redis user, ``burst`` the bucket size
    (``rate`` 0: no limit). ``body_limit`` bytes of a request body. ``insecure_local``:
    no tokens, every caller is the local operator; only bound to 127.0.0.1.
    ``max_callers``: the connection pools kept open, one per verified credential (least
    recently used closed first); ``pools_per_user`` of them at most per Redis user, each
    of at most ``pool_size`` connections for short commands; ``streams_per_user``: open
    event streams per Redis user (each holds a blocking connection per partition it
    reads). Connections are bounded by ``max_callers * (pool_size + streams_per_user *
    partitions)``. ``chart_interval``: seconds between the dashboard charts' samples
    (:mod:`gateway.dash.charts`)."""

    host: str = "127.0.0.1"
    port: int = 8080
    redis_url: str = ""
    service_url: str = ""
    body_limit: int = 1_000_000
    rate: float = 50.0
    burst: int = 100
    insecure_local: bool = False
    max_callers: int = 256
    pools_per_user: int = 4
    pool_size: int = 16
    streams_per_user: int = 8
    chart_interval: float = 10.0

    def __post_init__(self) -> None:
        if not 0 < self.port < 65536:
            raise InvalidArgument(f"gateway port must be in 1..65535 (got {self.port})")
        if self.body_limit < 1:
            raise InvalidArgument(f"body_limit must be >= 1 byte (got {self.body_limit})")
        if self.rate < 0 or self.burst < 1:
            raise InvalidArgument("rate must be >= 0 and burst >= 1")
        if min(self.max_callers, self.pools_per_user, self.pool_size,
               self.streams_per_user) < 1:
            raise InvalidArgument(
                "max_callers, pools_per_user, pool_size and streams_per_user must be >= 1")
        if not 0.1 <= self.chart_interval <= 3600:
            raise InvalidArgument(
                f"chart_interval must be 0.1..3600 seconds (got {self.chart_interval})")
        if self.insecure_local and self.host not in ("127.0.0.1", "localhost", "::1"):
            raise InvalidArgument(
                f"--insecure-local turns authentication off, so it binds only to 127.0.0.1 "
                f"(not {self.host})"
            )

    @property
    def bookkeeping_url(self) -> str:
        return self.service_url or self.redis_url

    @classmethod
    def from_env(cls, **overrides: Any) -> GatewaySettings:
        """Defaults, then ``BLACKBOARD_GATEWAY_<FIELD>`` (``redis_url`` falls back to
        ``BLACKBOARD_REDIS_URL``), then ``overrides`` that are not None."""
        kw: dict[str, Any] = {}
        for f in fields(cls):
            raw = os.environ.get(ENV_PREFIX + f.name.upper())
            if raw is None:
                continue
            kw[f.name] = _parse(f.name, raw, f.type)
        if "redis_url" not in kw and os.environ.get("BLACKBOARD_REDIS_URL"):
            kw["redis_url"] = os.environ["BLACKBOARD_REDIS_URL"]
        s = cls(**kw)
        return replace(s, **{k: v for k, v in overrides.items() if v is not None})


def _parse(name: str, raw: str, typ: Any) -> Any:
    t = typ if isinstance(typ, str) else getattr(typ, "__name__", str(typ))
    try:
        if t == "bool":
            if raw.lower() not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError(raw)
            return raw.lower() in ("1", "true", "yes")
        if t == "int":
            return int(raw)
        if t == "float":
            return float(raw)
    except ValueError:
        raise InvalidArgument(f"{ENV_PREFIX}{name.upper()}={raw!r} is not a {t}") from None
    return raw
