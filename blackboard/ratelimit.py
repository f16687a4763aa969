"""A token bucket per name in Redis (``scripts/ratelimit.lua``): one limit shared by every
process that asks, timed by the server's clock."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import InvalidArgument
from .keys import ROOT
from .scripts import run_script

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["RateDecision", "RateLimiter"]


@dataclass(frozen=True, slots=True)
class RateDecision:
    allowed: bool
    retry_after_ms: int
    remaining: int


class RateLimiter:
    """``rate`` per second, buckets of ``burst``, on ``bb`` (connected as a user that may
    run scripts on ``bb:rl:*``: the service user, not an agent's)."""

    PREFIX = f"{ROOT}:rl"

    def __init__(self, bb: Blackboard, rate: float, burst: int) -> None:
        if not rate > 0 or burst < 1:
            raise InvalidArgument("a rate limit needs rate > 0 and burst >= 1")
        self.rate = rate
        self.burst = burst
        self.bb = bb

    def key(self, name: str) -> str:
        return f"{self.PREFIX}:{name}"

    async def take(self, name: str, cost: int = 1) -> RateDecision:
        allowed, retry, left = await run_script(
            self.bb.client, "ratelimit", [self.key(name)], [repr(self.rate), self.burst, cost])
        return RateDecision(bool(int(allowed)), int(retry), int(left))
