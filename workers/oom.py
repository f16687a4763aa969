"""Redis over its ``maxmemory``: what a worker says while it waits for memory to be freed.

Redis (``noeviction``) then refuses every data write whole (:class:`~blackboard.errors.
OutOfMemory`, nothing written). A worker's loops keep what they hold and retry after a
backoff, counting no failure (nothing is dead-lettered for want of memory), and resume by
themselves once memory is freed. Each loop says so in one line, at most once per
``every_s`` seconds (``BLACKBOARD_WORKER_OOM_SAY_EVERY_S``), never a traceback per attempt.
"""

from __future__ import annotations

import logging

from .notice import Throttle

__all__ = ["OomNotice"]

log = logging.getLogger("workers")


class OomNotice:
    """Rate-limits one loop's "waiting for memory" line."""

    def __init__(self, what: str, every_s: float = 30.0) -> None:
        self.what, self.every_s = what, every_s
        self._throttle = Throttle(every_s)

    def say(self, doing: str = "waiting for memory to be freed") -> None:
        if self._throttle.due():
            log.warning("%s: Redis is over its maxmemory and refuses writes; %s",
                        self.what, doing)
