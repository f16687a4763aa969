"""A token bucket per name in Redis (``scripts/ratelimit.lua``): one limit shared by every
process that asks, timed by the server's clock.

A gateway takes one token per request, so the take is on every request's path: it is
sent on a socket of its own (:mod:`blackboard.side_socket`, logged in as the limiter's
blackboard user), one ``send`` and one ``recv`` parsed by hiredis, with none of redis-py's
pool, retry and timeout machinery: 144 - 174 us p50 and ~0.1 ms of CPU a take against
359 - 374 us and ~0.27 ms through the pool (a 2-core machine at load 5 - 6). A take that
finds the socket busy (another request's take in flight), or a connection it does
not speak, goes through the pool: the same script on the same key, so one bucket.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import InvalidArgument
from .keys import ROOT
from .packing import pack
from .scripts import SCRIPTS, run_script
from .side_socket import SideSocket

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["RateDecision", "RateLimiter"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RateDecision:
    allowed: bool
    retry_after_ms: int
    remaining: int


class RateLimiter:
    """``rate`` per second, buckets of ``burst``, on ``bb`` (connected as a user that may
    run scripts on ``bb:rl:*``: the service user, not an agent's). ``aclose()`` closes
    its socket (the blackboard's pool is the blackboard's to close). ``direct`` and
    ``pooled`` count the takes answered on its socket and through the pool."""

    PREFIX = f"{ROOT}:rl"

    def __init__(self, bb: Blackboard, rate: float, burst: int) -> None:
        if not rate > 0 or burst < 1:
            raise InvalidArgument("a rate limit needs rate > 0 and burst >= 1")
        self.rate = rate
        self.burst = burst
        self.bb = bb
        # A refused login (a rotated password) is the pool's to report, and may heal: the
        # next take tries the socket again.
        self._side = SideSocket(bb, "rate limiter", retry_refused=True)
        self.direct = 0
        self.pooled = 0

    def key(self, name: str) -> str:
        return f"{self.PREFIX}:{name}"

    async def take(self, name: str, cost: int = 1) -> RateDecision:
        keys = [self.key(name)]
        args: list[str | int] = [repr(self.rate), self.burst, cost]
        reply = await self._direct(keys, args)
        if reply is None:
            self.pooled += 1
            reply = await run_script(self.bb.client, "ratelimit", keys, args)
        else:
            self.direct += 1
        allowed, retry, left = reply
        return RateDecision(bool(int(allowed)), int(retry), int(left))

    async def aclose(self) -> None:
        self._side.close()

    async def _direct(self, keys: list[str], args: list[str | int]) -> list[int] | None:
        """The script's reply on the limiter's own socket; None when the pool must ask
        (busy, not open, no answer: an error reply such as NOSCRIPT, which the pool's
        path mends by loading the script)."""
        sock = await self._side.claim()
        if sock is None:
            return None
        try:
            if not sock.send(pack("EVALSHA", SCRIPTS["ratelimit"].sha, len(keys), *keys,
                                  *args)):
                self._side.drop()
                return None
            reply: list[int] = await sock.reply(self.bb.settings.socket_timeout)
        except (OSError, TimeoutError) as exc:  # no answer to trust: the pool asks
            log.debug("rate limiter's socket got no answer (%s); asking through the pool",
                      exc)
            self._side.drop()
            return None
        except BaseException:
            self._side.drop()  # an unread reply would answer the next take
            raise
        finally:
            self._side.release()
        return reply
