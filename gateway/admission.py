"""When a read may start before its rate bucket has answered (issue 24: REST overhead).

Every request takes one token from its Redis user's bucket (:mod:`blackboard.ratelimit`),
one round trip to Redis. A write waits for that answer before it changes anything. A
read whose user had tokens to spare at its last answer need not: its take is sent, the
read runs meanwhile, and the response waits for the answer (a refusal is the 429 it
would have been). The bucket decides exactly as before -- what is admitted is what its
takes allowed -- only the wait overlaps the work.

What bounds the work a refused read can cost: a user runs at most as many reads ahead
of their answers as its last answer said it had tokens left, in this process. Once a
take is refused (or the tokens run low) the next reads wait for their answer first, as
a write does, so a caller over its limit costs a read's work at most that many times per
refill, never once per request.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["MAX_PRINCIPALS", "Admission"]

#: Users remembered at once (least recently seen forgotten first: a forgotten user's next
#: read waits for its answer, as a first read does).
MAX_PRINCIPALS = 4096


@dataclass
class _Seen:
    remaining: int = 0  # tokens left at the last answer this process got
    ahead: int = 0  # reads running before their answer


class Admission:
    """Per Redis user: the tokens its last answer left, and its reads running ahead."""

    def __init__(self, max_principals: int = MAX_PRINCIPALS) -> None:
        self._max = max_principals
        self._seen: OrderedDict[str, _Seen] = OrderedDict()

    def may_run_ahead(self, principal: str) -> bool:
        """Whether a read of ``principal`` may start before its take is answered; if so it
        is counted ahead until :meth:`answered` (with ``ahead=True``)."""
        s = self._seen.get(principal)
        if s is None or s.ahead >= s.remaining:
            return False
        s.ahead += 1
        self._seen.move_to_end(principal)
        return True

    def answered(self, principal: str, remaining: int, *, ahead: bool = False) -> None:
        """A take of ``principal`` was answered with ``remaining`` tokens left (0 when
        refused); ``ahead``: by a read that ran ahead."""
        s = self._seen.get(principal)
        if s is None:
            s = self._seen[principal] = _Seen()
            while len(self._seen) > self._max:
                self._seen.popitem(last=False)
        else:
            self._seen.move_to_end(principal)
        s.remaining = remaining
        if ahead:
            s.ahead = max(0, s.ahead - 1)

    def ahead(self, principal: str) -> int:
        """Reads of ``principal`` running ahead of their answer now."""
        s = self._seen.get(principal)
        return 0 if s is None else s.ahead
