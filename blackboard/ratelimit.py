"""A token bucket per name in Redis (``scripts/ratelimit.lua``): one limit shared by every
process that asks, timed by the server's clock.

A gateway takes one token per request, so the take is on every request's path: it is
sent on a socket of its own (:mod:`blackboard.side_socket`, logged in as the limiter's
blackboard user), one ``send`` and one ``recv`` parsed by hiredis, with none of redis-py's
pool, retry and timeout machinery: 144 - 174 us p50 and ~0.1 ms of CPU a take against
359 - 374 us and ~0.27 ms through the pool (a 2-core machine at load 5 - 6). A take that
finds the socket busy (another request's take in flight), or a connection it does
not speak, goes through the pool: the same script on the same key, so one bucket.

A take that reaches Redis may also lease a few more whole tokens for the same name
(:attr:`RateLimiter.lease`, from the bucket's size: :func:`lease_for`), which later takes
in this process spend without a round trip. The bucket stays the one truth: a leased
token was taken from it, so over any window no more requests pass than the bucket gave
out. What a lease changes: a process holds at most ``lease - 1`` tokens a name has not
spent yet, for at most :data:`LEASE_S` (then they are dropped, never given back), so a
caller at its limit may be refused up to that many requests early on one process while
another holds them, and a burst right after such a lease may pass the bucket's size by
at most that many a process.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import InvalidArgument
from .keys import ROOT
from .packing import pack
from .scripts import SCRIPTS, run_script
from .side_socket import SideSocket

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["LEASE_S", "RateDecision", "RateLimiter", "lease_for"]

log = logging.getLogger(__name__)

#: Seconds a process keeps leased tokens it has not spent.
LEASE_S = 1.0
#: The most tokens one round trip leases, and the bucket's share one lease may hold
#: (1/20 of the burst: at the gateway's default burst of 100, five).
LEASE_MAX = 16
LEASE_SHARE = 20
#: Names with unspent leased tokens kept in one process (the oldest dropped beyond).
LEASES_KEPT = 4096


def lease_for(burst: int) -> int:
    """Tokens one round trip takes for a bucket of ``burst``: 1 (no lease) below 40."""
    return max(1, min(LEASE_MAX, burst // LEASE_SHARE))


@dataclass(frozen=True, slots=True)
class RateDecision:
    """``remaining``: the name's tokens left, as this process knows them (the bucket's at
    its last round trip, plus the lease it holds unspent)."""

    allowed: bool
    retry_after_ms: int
    remaining: int


class RateLimiter:
    """``rate`` per second, buckets of ``burst``, on ``bb`` (connected as a user that may
    run scripts on ``bb:rl:*``: the service user, not an agent's). ``aclose()`` closes
    its socket (the blackboard's pool is the blackboard's to close). ``direct`` and
    ``pooled`` count the takes answered on its socket and through the pool, ``local``
    those spent from a lease. ``lease``: tokens one round trip may take (default
    :func:`lease_for` the burst; 1: every take asks Redis)."""

    PREFIX = f"{ROOT}:rl"

    def __init__(self, bb: Blackboard, rate: float, burst: int,
                 lease: int | None = None) -> None:
        if not rate > 0 or burst < 1:
            raise InvalidArgument("a rate limit needs rate > 0 and burst >= 1")
        if lease is not None and not 1 <= lease <= burst:
            raise InvalidArgument(f"a rate limit's lease must be 1..burst (got {lease})")
        self.rate = rate
        self.burst = burst
        self.lease = lease_for(burst) if lease is None else lease
        self.bb = bb
        # name -> (tokens leased and not spent, monotonic time they were leased, tokens
        # the bucket had left then)
        self._held: dict[str, tuple[int, float, int]] = {}
        self._leasing: dict[str, asyncio.Future[None]] = {}
        # A refused login (a rotated password) is the pool's to report, and may heal: the
        # next take tries the socket again.
        self._side = SideSocket(bb, "rate limiter", retry_refused=True)
        self.direct = 0
        self.pooled = 0
        self.local = 0

    def key(self, name: str) -> str:
        return f"{self.PREFIX}:{name}"

    async def take(self, name: str, cost: int = 1) -> RateDecision:
        """``cost`` tokens of ``name``'s bucket: from this process's lease when it holds
        enough, else from Redis (leasing up to :attr:`lease` in all)."""
        if self.lease <= cost:
            return (await self._ask(name, cost, cost))[0]
        while True:
            spent = self._spend(name, cost)
            if spent is not None:
                return spent
            pending = self._leasing.get(name)
            if pending is None:
                break
            # Another take of this name is leasing: wait for it rather than lease twice.
            await asyncio.shield(pending)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._leasing[name] = done
        try:
            d, taken = await self._ask(name, cost, self.lease)
            if d.allowed and taken > cost:
                self._keep(name, taken - cost, d.remaining)
                return RateDecision(True, 0, d.remaining + taken - cost)
            return d
        finally:
            del self._leasing[name]
            done.set_result(None)

    def _spend(self, name: str, cost: int) -> RateDecision | None:
        """``cost`` of ``name``'s leased tokens (None when it holds too few)."""
        held, at, left = self._held.get(name, (0, 0.0, 0))
        if held and time.monotonic() - at > LEASE_S:
            del self._held[name]  # stale: dropped, never given back
            return None
        if held < cost:
            return None
        if held == cost:
            del self._held[name]
        else:
            self._held[name] = (held - cost, at, left)
        self.local += 1
        return RateDecision(True, 0, left + held - cost)

    def _keep(self, name: str, n: int, left: int) -> None:
        self._held[name] = (n, time.monotonic(), left)
        while len(self._held) > LEASES_KEPT:
            del self._held[next(iter(self._held))]

    async def _ask(self, name: str, cost: int, most: int) -> tuple[RateDecision, int]:
        """Redis's decision on ``cost`` tokens of ``name`` (up to ``most`` taken), and
        how many it took."""
        keys = [self.key(name)]
        args: list[str | int] = [repr(self.rate), self.burst, cost, most]
        reply = await self._direct(keys, args)
        if reply is None:
            self.pooled += 1
            reply = await run_script(self.bb.client, "ratelimit", keys, args)
        else:
            self.direct += 1
        allowed, retry, left, taken = reply
        return RateDecision(bool(int(allowed)), int(retry), int(left)), int(taken)

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
