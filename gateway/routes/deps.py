"""Route dependencies: the authenticated, rate-limited caller."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

from fastapi import Depends, Request

from blackboard import ServerUnavailable
from blackboard.ratelimit import RateDecision, RateLimiter

from ..admission import Admission
from ..caller import Caller, resolve_caller
from ..errors import TooManyRequests
from ..refusals import BookkeepingUnavailable

log = logging.getLogger(__name__)

T = TypeVar("T")


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

__all__ = ["CallerDep", "ReaderDep", "authorized", "charged", "reader"]


def _refusal(limiter: RateLimiter, caller: Caller, d: RateDecision) -> TooManyRequests:
    secs = max(1, -(-d.retry_after_ms // 1000))
    return TooManyRequests(
        f"user {caller.principal} is over its rate limit "
        f"({limiter.rate:g}/s, burst {limiter.burst}); retry in {d.retry_after_ms} ms",
        headers={"Retry-After": str(secs)})


def _admission(request: Request) -> Admission | None:
    return getattr(request.app.state, "admission", None)


async def _charge(request: Request, limiter: RateLimiter, caller: Caller) -> None:
    """One request from the caller's bucket, answered before anything else runs."""
    d = await _take(request, limiter, caller.principal)
    admission = _admission(request)
    if admission is not None:
        admission.answered(caller.principal, d.remaining if d.allowed else 0)
    if not d.allowed:
        raise _refusal(limiter, caller, d)


async def authorized(request: Request) -> Caller:
    """The caller, after its Redis user's bucket allowed one more request (429
    otherwise). Counted after Redis verified the login: a request with a bad or edited
    credential costs no one's bucket, and every token of a user shares the user's."""
    caller = await resolve_caller(request)
    limiter = request.app.state.limiter
    if limiter is not None:
        await _charge(request, limiter, caller)
    return caller


async def reader(request: Request) -> Caller:
    """The caller of a route without side effects, charged one request: while its user
    had tokens to spare at the last answer, the take is sent and the route goes on (its
    read runs through :func:`charged`, which waits for the answer before the response);
    otherwise answered first, as :func:`authorized` does. Sent before the body is
    validated: a malformed request costs its token too."""
    caller = await resolve_caller(request)
    limiter = request.app.state.limiter
    if limiter is None:
        return caller
    admission = _admission(request)
    if admission is None or not admission.may_run_ahead(caller.principal):
        await _charge(request, limiter, caller)
        return caller
    principal = caller.principal

    def noted(t: asyncio.Future[RateDecision]) -> None:
        # a failed or cancelled take tells nothing: the next read waits for its answer
        d = None if t.cancelled() or t.exception() is not None else t.result()
        admission.answered(principal, d.remaining if d is not None and d.allowed else 0,
                           ahead=True)

    take = asyncio.ensure_future(_take(request, limiter, principal))
    take.add_done_callback(noted)
    request.state.take = take
    await asyncio.sleep(0)  # sent before the route's own work starts
    return caller


async def charged(request: Request, read: Callable[[], Awaitable[T]]) -> T:
    """``read()``'s result once the take :func:`reader` sent is answered: a refusal is a
    429 whatever the read did (:mod:`gateway.admission` bounds what it may have cost)."""
    take: asyncio.Future[RateDecision] | None = getattr(request.state, "take", None)
    if take is None:  # answered before the route ran, or no limit
        return await read()
    try:
        result = await read()
    except Exception:
        # charged all the same: a refusal is the answer (the read's error otherwise)
        d = await _settle(take)
        if d is not None and not d.allowed:
            raise _refusal(request.app.state.limiter, request.state.caller, d) from None
        raise
    d = await take
    if not d.allowed:
        raise _refusal(request.app.state.limiter, request.state.caller, d)
    return result


async def _settle(take: asyncio.Future[RateDecision]) -> RateDecision | None:
    """The take's answer after the read failed (None when the take failed too: the read's
    error is the one to report)."""
    try:
        return await take
    except Exception:
        return None


CallerDep = Annotated[Caller, Depends(authorized)]


ReaderDep = Annotated[Caller, Depends(reader)]
"""The caller of a route without side effects (:func:`reader`): its read runs through
:func:`charged`."""
