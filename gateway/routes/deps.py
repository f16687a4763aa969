"""Route dependencies: the authenticated, rate-limited caller."""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import Depends, Request

from blackboard import ServerUnavailable
from blackboard.ratelimit import RateDecision, RateLimiter

from ..caller import Caller, resolve_caller
from ..errors import TooManyRequests
from ..refusals import BookkeepingUnavailable

log = logging.getLogger(__name__)


async def _take(request: Request, limiter: RateLimiter, principal: str) -> RateDecision:
    """One request from ``principal``'s bucket; the bookkeeping connection's failure (a
    rotated or protected password of the service URL's user) is one log line when it
    starts and one when it ends, and a 503 naming the setting for each request meanwhile."""
    state = request.app.state
    try:
        d = await limiter.take(principal)
    except ServerUnavailable as exc:
        text = " ".join(str(exc).split())[:300]
        if not getattr(state, "bookkeeping_failing", False):
            state.bookkeeping_failing = True
            log.error("the gateway's own Redis connection (rate buckets) fails: %s; check "
                      "BLACKBOARD_GATEWAY_SERVICE_URL (a rotated password?)", text)
        raise BookkeepingUnavailable(
            f"the gateway's own Redis connection (rate buckets) fails: {text}; the "
            "operator must fix BLACKBOARD_GATEWAY_SERVICE_URL") from None
    if getattr(state, "bookkeeping_failing", False):
        state.bookkeeping_failing = False
        log.warning("the gateway's own Redis connection works again")
    return d

__all__ = ["CallerDep", "authorized"]


async def authorized(request: Request) -> Caller:
    """The caller, after its Redis user's bucket allowed one more request (429
    otherwise). Counted after Redis verified the login: a request with a bad or edited
    credential costs no one's bucket, and every token of a user shares the user's."""
    caller = await resolve_caller(request)
    limiter = request.app.state.limiter
    if limiter is not None:
        d = await _take(request, limiter, caller.principal)
        if not d.allowed:
            secs = max(1, -(-d.retry_after_ms // 1000))
            raise TooManyRequests(
                f"user {caller.principal} is over its rate limit "
                f"({limiter.rate:g}/s, burst {limiter.burst}); retry in {d.retry_after_ms} ms",
                headers={"Retry-After": str(secs)})
    return caller


CallerDep = Annotated[Caller, Depends(authorized)]
