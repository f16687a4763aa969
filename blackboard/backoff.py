"""Exponential backoff for a loop that must outlive failures (a feed reader).

A reader that retries at a fixed short interval turns one lasting failure (a revoked
login, a damaged feed) into a log line and a round trip every interval, forever. A
:class:`Backoff` doubles the wait on each failure in a row, up to ``cap``, and starts over
after a success; ``first_failure`` tells the caller to log only the first of a streak.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["Backoff"]


@dataclass
class Backoff:
    first: float = 0.5
    cap: float = 30.0
    failures: int = 0

    def next_delay(self) -> float:
        """Count one failure; the seconds to wait before trying again (with jitter, so
        readers failing together do not retry together)."""
        d = min(self.cap, self.first * 2 ** min(self.failures, 16))
        self.failures += 1
        return d * random.uniform(0.8, 1.0)

    @property
    def first_failure(self) -> bool:
        """The failure just counted is the first of its streak."""
        return self.failures == 1

    def reset(self) -> None:
        self.failures = 0
