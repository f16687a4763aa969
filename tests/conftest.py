"""Fixtures: a real redis-server per test session (and a 3-master cluster on demand)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
import redis
from redis_snapshot import Snapshot, snapshot_of

from blackboard import Blackboard
from blackboard.server import RedisClusterServer, RedisServer


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer | None]:
    """The session's Redis: ``BLACKBOARD_REDIS_URL`` when set, else an embedded server."""
    if os.environ.get("BLACKBOARD_REDIS_URL"):
        yield None
        return
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="session")
def redis_url(redis_server: RedisServer | None) -> str:
    return redis_server.url if redis_server is not None else os.environ["BLACKBOARD_REDIS_URL"]


@pytest.fixture()
def clean_redis(redis_url: str) -> Iterator[redis.Redis]:
    """A sync client on an emptied database."""
    r = redis.Redis.from_url(redis_url)
    r.flushall()
    r.script_flush()
    yield r
    r.close()


@pytest.fixture()
async def bb(clean_redis: redis.Redis, redis_url: str) -> AsyncIterator[Blackboard]:
    async with Blackboard.connect(redis_url, partitions=8) as board:
        yield board


@pytest.fixture(scope="session")
def cluster() -> Iterator[RedisClusterServer]:
    with RedisClusterServer(3) as c:
        yield c


@pytest.fixture()
async def cbb(cluster: RedisClusterServer) -> AsyncIterator[Blackboard]:
    """A blackboard on the 3-master cluster, emptied first."""
    for n in cluster.nodes:
        r = redis.Redis(port=n.port)
        r.flushall()
        r.close()
    async with Blackboard.connect(cluster.url, partitions=8) as board:
        yield board


@pytest.fixture()
def snapshot(clean_redis: redis.Redis) -> Callable[[], Snapshot]:
    """``snapshot()`` -> {key: DUMP} of the whole (single) Redis the ``bb`` fixture uses."""
    return lambda: snapshot_of(clean_redis)
