"""Worker fixtures: real worker OS processes against the session's redis-server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from workers_support import WorkerProcs


@pytest.fixture()
def worker_procs(redis_url: str, clean_redis: object) -> Iterator[WorkerProcs]:
    w = WorkerProcs(redis_url)
    yield w
    w.close()
