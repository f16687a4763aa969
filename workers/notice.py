"""At most one line per interval: the clock the workers' repeated notices share (a loop
that waits for memory, :mod:`.oom`; for Redis to answer, :mod:`.outage`)."""

from __future__ import annotations

import time

__all__ = ["Throttle"]


class Throttle:
    """``due()`` is true at most once per ``every_s`` seconds (the first call is due);
    ``reset()`` makes the next call due again."""

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self._said = float("-inf")

    def due(self) -> bool:
        now = time.monotonic()
        if now - self._said < self.every_s:
            return False
        self._said = now
        return True

    def reset(self) -> None:
        self._said = float("-inf")
