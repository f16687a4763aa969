"""Redis unreachable: what a worker's lease loop says while it waits for it to be back.

A lost connection, a refused login, a failover in progress: the lease loop retries every
tick and gives its partitions up after a lease TTL (others take them). It says so in one
line when the outage starts, at most once per ``every_s`` seconds while it lasts, and once
when Redis answers again; never a traceback per tick (the lines of an outage of a minute
were ~60 before).
"""

from __future__ import annotations

import logging
import time

from .notice import Throttle

__all__ = ["OutageNotice"]

log = logging.getLogger("workers")


class OutageNotice:
    """Rate-limits one loop's "Redis unreachable" lines."""

    def __init__(self, what: str, every_s: float = 30.0) -> None:
        self.what, self.every_s = what, every_s
        self._since: float | None = None
        self._throttle = Throttle(every_s)

    def failed(self, exc: BaseException) -> None:
        now = time.monotonic()
        if self._since is None:
            self._since = now
        if self._throttle.due():
            reason = " ".join(str(exc).split())[:200]
            log.error("%s: Redis unreachable for %.0f s (%s); retrying each tick",
                      self.what, now - self._since, reason)

    def recovered(self) -> None:
        if self._since is not None:
            log.warning("%s: Redis answers again after %.0f s", self.what,
                        time.monotonic() - self._since)
            self._since = None
            self._throttle.reset()
