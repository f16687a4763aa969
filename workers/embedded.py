"""Use ``BLACKBOARD_REDIS_URL`` when given, else start a private redis-server for the command."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from blackboard import RedisServer

__all__ = ["redis_or_embedded"]


@contextlib.contextmanager
def redis_or_embedded(url: str | None, *, appendfsync: str = "everysec") -> Iterator[str]:
    """Yield a Redis URL: ``url``, else ``$BLACKBOARD_REDIS_URL``, else an embedded server's.

    The embedded server lives in a temporary data directory and stops on exit.
    """
    url = url or os.environ.get("BLACKBOARD_REDIS_URL")
    if url:
        yield url
        return
    with RedisServer(appendfsync=appendfsync) as server:
        yield server.url
