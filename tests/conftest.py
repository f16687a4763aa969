"""Fixtures: a real redis-server per test session (and a 3-master cluster, or one of 3
masters + 3 replicas, on demand)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
import redis
from redis_snapshot import Snapshot, snapshot_of

from blackboard import Blackboard
from blackboard.server import RedisClusterServer, RedisServer
from tests.consolidation.cons_support import ChatServer
from tests.support_llm import LocalLLM, llm_missing, start_local_llm
from tests.support_replicated import ReplicatedCluster
from tests.support_secure import Secure, reset_secure, secure_mode

# Marks every test pure/redis/process/browser from its fixtures, and keeps the marks true.
pytest_plugins = ["tiers"]


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A real local chat-completions server (``tests/consolidation/cons_support.py``)."""
    s = ChatServer()
    s.thread.start()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="session")
def local_llm() -> Iterator[LocalLLM]:
    """A real small model behind the OpenAI protocol (``tests/support_llm.py``), one per
    session: started at first use, skipped with what to install where the wheels are not."""
    missing = llm_missing()
    if missing:
        pytest.skip(missing)
    llm = start_local_llm()
    try:
        yield llm
    finally:
        llm.close()


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


@pytest.fixture
def replicated_cluster() -> Iterator[ReplicatedCluster]:
    """A fresh 3 masters + 3 replicas cluster per test (a failover test kills a node)."""
    c = ReplicatedCluster().start()
    try:
        yield c
    finally:
        c.stop()


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


# -- secure mode: the default user password-protected, as `blackboard acl protect-default`
# leaves a server. The security tests that need a closed default user use these; the
# fixtures above keep an open default user for everything else.


@pytest.fixture(scope="session")
def secure_redis() -> Iterator[Secure]:
    """A private redis-server (aclfile in its data dir) in secure mode."""
    with RedisServer() as server:
        yield secure_mode(server.url, (server.port,))


@pytest.fixture()
def secure_clean(secure_redis: Secure) -> Secure:
    """The secure server, emptied (for tests that drive the CLI, which runs its own loop)."""
    reset_secure(secure_redis)
    return secure_redis


@pytest.fixture()
def secure_cluster_clean(secure_cluster: Secure) -> Secure:
    reset_secure(secure_cluster)
    return secure_cluster


@pytest.fixture()
async def secure_bb(secure_redis: Secure) -> AsyncIterator[Blackboard]:
    """An admin blackboard (the protected default user) on the emptied secure server."""
    reset_secure(secure_redis)
    async with Blackboard.connect(secure_redis.url, partitions=8, username="default",
                                  password=secure_redis.password) as board:
        yield board


@pytest.fixture(scope="session")
def secure_cluster() -> Iterator[Secure]:
    """A 3-master cluster in secure mode (the default user protected on every node)."""
    with RedisClusterServer(3) as c:
        yield secure_mode(c.url, tuple(n.port for n in c.nodes))


@pytest.fixture()
async def secure_cbb(secure_cluster: Secure) -> AsyncIterator[Blackboard]:
    reset_secure(secure_cluster)
    async with Blackboard.connect(secure_cluster.url, partitions=8, username="default",
                                  password=secure_cluster.password) as board:
        yield board
