"""Client-side limits: an async request-rate limiter and a token budget."""

from __future__ import annotations

import asyncio
import time

from .errors import BudgetExceeded

__all__ = ["RateLimiter", "TokenBudget"]


class RateLimiter:
    """Spaces requests at least ``1 / rate`` seconds apart (``rate`` in requests/s).

    Starts are reserved under a lock, so concurrent callers queue fairly instead of
    bursting; ``rate=None`` disables the limit.
    """

    def __init__(self, rate: float | None) -> None:
        if rate is not None and not rate > 0:
            raise ValueError("rate must be positive requests per second, or None")
        self._interval = 0.0 if rate is None else 1.0 / rate
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        if self._interval == 0.0:
            return
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self._interval
        if start > now:
            await asyncio.sleep(start - now)


class TokenBudget:
    """Counts prompt + completion tokens (from the response ``usage``) against ``limit``.

    ``check`` refuses a call that would start with the budget spent (or, given an
    estimate, would overrun it); ``spend`` records usage and raises
    :class:`BudgetExceeded` once the total passes the limit. ``limit=None`` only counts.
    """

    def __init__(self, limit: int | None) -> None:
        if limit is not None and limit < 0:
            raise ValueError("token budget must be >= 0 or None")
        self.limit = limit
        self.used = 0

    @property
    def remaining(self) -> int | None:
        return None if self.limit is None else max(0, self.limit - self.used)

    def check(self, estimate: int = 0) -> None:
        if self.limit is not None and self.used + estimate > self.limit:
            raise BudgetExceeded(self.used + estimate, self.limit)

    def spend(self, tokens: int) -> None:
        self.used += max(0, tokens)
        if self.limit is not None and self.used > self.limit:
            raise BudgetExceeded(self.used, self.limit)
