"""A token bucket per name in Redis (``scripts/ratelimit.lua``): one limit shared by every
process that asks, timed by the server's clock."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from .errors import InvalidArgument
from .keys import ROOT

__all__ = ["RateDecision", "RateLimiter"]


@dataclass(frozen=True, slots=True)
class RateDecision:
    allowed: bool
    retry_after_ms: int
    remaining: int


@cache
def _source() -> str:
    return resources.files("blackboard").joinpath("scripts", "ratelimit.lua").read_text("utf-8")


class RateLimiter:
    """``rate`` per second, buckets of ``burst``, on ``client`` (a redis-py async client
    that may run scripts on ``bb:rl:*`` — the service user, not an agent's)."""

    PREFIX = f"{ROOT}:rl"

    def __init__(self, client: Any, rate: float, burst: int) -> None:
        if not rate > 0 or burst < 1:
            raise InvalidArgument("a rate limit needs rate > 0 and burst >= 1")
        self.rate = rate
        self.burst = burst
        self._script = client.register_script(_source())

    def key(self, name: str) -> str:
        return f"{self.PREFIX}:{name}"

    async def take(self, name: str, cost: int = 1) -> RateDecision:
        allowed, retry, left = await self._script(
            keys=[self.key(name)], args=[repr(self.rate), self.burst, cost])
        return RateDecision(bool(int(allowed)), int(retry), int(left))
