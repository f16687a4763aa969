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
    bookkeeping only (the per-token rate buckets, readiness) — never used to serve memory;
    empty: ``redis_url``. ``rate`` requests per second per token, ``burst`` the bucket size
    (``rate`` 0: no limit). ``body_limit`` bytes of a request body. ``insecure_local``:
    no tokens, every caller is the local operator; only bound to 127.0.0.1.
    ``max_callers``: the per-token connection pools kept open (least recently used
    closed first)."""

    host: str = "127.0.0.1"
    port: int = 8080
    redis_url: str = ""
    service_url: str = ""
    body_limit: int = 1_000_000
    rate: float = 50.0
    burst: int = 100
    insecure_local: bool = False
    max_callers: int = 256

    def __post_init__(self) -> None:
        if not 0 < self.port < 65536:
            raise InvalidArgument(f"gateway port must be in 1..65535 (got {self.port})")
        if self.body_limit < 1:
            raise InvalidArgument(f"body_limit must be >= 1 byte (got {self.body_limit})")
        if self.rate < 0 or self.burst < 1:
            raise InvalidArgument("rate must be >= 0 and burst >= 1")
        if self.max_callers < 1:
            raise InvalidArgument("max_callers must be >= 1")
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
