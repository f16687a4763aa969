"""Commands redis-py must not run again on its own: those whose reply, once lost, loses
what it carried.

redis-py runs a command again when its connection fails (the single-server client's
``retry``; the cluster client reads the cluster's layout again and retries). For most
commands that is what we want. ``XREADGROUP >`` hands events to the consumer as Redis
answers it: when Redis ran it but the connection died before the reply arrived, the retry
blocks for, or answers with, what comes after, and those events wait in the consumer's
pending list, delivered to nobody. A ``CLIENT KILL`` under a write load did it: 5
acknowledged writes never consolidated, every reader still progressing.

A reader runs such a command under :func:`unretried`: a connection fault then raises
:class:`ReplyMaybeLost` (the connection closed, the cluster's layout read again) instead of
the retry, and the reader reads its own pending list before it reads on
(:mod:`blackboard.consumer`). :func:`failed` is called where redis-py is about to retry
(:class:`blackboard.connection.AbandoningRetry`, :class:`blackboard.redis_errors.
TranslatingCluster`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from .errors import ServerUnavailable

__all__ = ["ReplyMaybeLost", "failed", "unretried"]

_unretried: ContextVar[bool] = ContextVar("blackboard_unretried", default=False)


class ReplyMaybeLost(ServerUnavailable):
    """A command run under :func:`unretried` met a connection fault: Redis may have run it
    and its reply been lost; redis-py did not run it again."""


@contextmanager
def unretried() -> Iterator[None]:
    """The block's commands are not run again after a connection fault:
    :class:`ReplyMaybeLost` is raised instead."""
    token = _unretried.set(True)
    try:
        yield
    finally:
        _unretried.reset(token)


def failed(error: BaseException | None = None) -> None:
    """redis-py is about to run a command again after ``error``: raise
    :class:`ReplyMaybeLost` instead when the command runs under :func:`unretried`."""
    if _unretried.get():
        raise ReplyMaybeLost(f"the connection failed under a command whose reply may have "
                             f"been lost ({error!r})")
