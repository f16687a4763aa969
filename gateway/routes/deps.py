"""Route dependencies: the authenticated, rate-limited caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from ..caller import Caller, resolve_caller
from ..errors import TooManyRequests

__all__ = ["CallerDep", "authorized"]


async def authorized(request: Request) -> Caller:
    """The caller, after its token's bucket allowed one more request (429 otherwise).
    Counted after authentication: a request with a bad token costs no one's bucket."""
    caller = await resolve_caller(request)
    limiter = request.app.state.limiter
    if limiter is not None:
        d = await limiter.take(caller.principal)
        if not d.allowed:
            secs = max(1, -(-d.retry_after_ms // 1000))
            raise TooManyRequests(
                f"token {caller.token_id} is over its rate limit "
                f"({limiter.rate:g}/s, burst {limiter.burst}); retry in {d.retry_after_ms} ms",
                headers={"Retry-After": str(secs)})
    return caller


CallerDep = Annotated[Caller, Depends(authorized)]
