"""A pytest plugin: test your agents against real memory, the way this project's tests do.

Installed with the package (entry point ``pytest11``), so the fixtures are there as soon as
``reactive-blackboard[testing]`` is installed; nothing to import::

    async def test_my_agent_remembers(agent_memory):
        await agent_memory.store("Acme pays in 30 days", tags={"fact"})
        hits = await agent_memory.recall("payment terms")
        assert "30 days" in hits[0].entry.text

    def test_from_sync_code(sync_agent_memory):
        sync_agent_memory.store("hello")

Fixtures:

``blackboard_server``
    one private ``redis-server`` per test session on a free port (AOF on, in a temporary
    directory): ``$BLACKBOARD_REDIS_SERVER``, else ``redis-server`` on PATH, else the
    ``embedded`` extra's binary.
``blackboard_url``
    its URL, with the database emptied before each test.
``blackboard``
    a connected :class:`~blackboard.Blackboard` (async fixture).
``agent_memory``
    an :class:`~memory.AgentMemory` for agent ``test-agent`` in team ``test-team``, its
    default hierarchy installed (async fixture; needs pytest-asyncio).
``sync_agent_memory``
    the same as a blocking :class:`~memory.sync.SyncMemory`, for tests without a loop.

Async fixtures need pytest-asyncio (the ``testing`` extra brings it); they are declared
with ``pytest_asyncio.fixture`` so they work in its strict mode too, and an ``async def``
test that asks for one of them runs on asyncio without a marker (strict mode, pytest-asyncio's
default, would otherwise fail it as "async def functions are not natively supported").

pytest loads this plugin at the start of every run in an environment where the package is
installed, whatever the project under test. So it sits above :mod:`memory` (its fixtures
hand out an ``AgentMemory``) in a package of its own whose import loads nothing of ours:
each fixture imports what it needs when a test asks for it, and a run that uses none of
them pays nothing for Redis, pydantic or numpy.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from blackboard import Blackboard
    from blackboard.server import RedisServer
    from memory import AgentMemory
    from memory.sync import SyncMemory

try:
    import pytest_asyncio

    _async_fixture: Any = pytest_asyncio.fixture
except ImportError:  # pragma: no cover - the sync fixtures still work
    _async_fixture = pytest.fixture

__all__ = ["AGENT", "TEAM", "agent_memory", "blackboard", "blackboard_server",
           "blackboard_url", "sync_agent_memory"]

AGENT = "test-agent"
TEAM = "test-team"
#: The async fixtures: a coroutine test asking for one of them gets the asyncio marker.
_ASYNC_FIXTURES = frozenset({"blackboard", "agent_memory"})


@pytest.hookimpl(hookwrapper=True)
def pytest_pycollect_makeitem(collector: Any, name: str, obj: object) -> Generator[None]:
    # Before pytest-asyncio's own wrapper builds the item: it reads the marker from it.
    if (_async_fixture is not pytest.fixture and inspect.iscoroutinefunction(obj)
            and _ASYNC_FIXTURES & set(inspect.signature(obj).parameters)
            and not any(m.name == "asyncio" for m in getattr(obj, "pytestmark", []))):
        pytest.mark.asyncio(obj)
    yield


@pytest.fixture(scope="session")
def blackboard_server() -> Iterator[RedisServer]:
    """A private redis-server for the test session (free port, temporary AOF dir)."""
    from blackboard.server import RedisServer

    with RedisServer() as server:
        yield server


@pytest.fixture()
def blackboard_url(blackboard_server: RedisServer) -> Iterator[str]:
    """The server's URL; the database is emptied (and scripts flushed) before the test."""
    import redis

    r = redis.Redis.from_url(blackboard_server.url)
    try:
        r.flushall()
        r.script_flush()
    finally:
        r.close()
    yield blackboard_server.url


@_async_fixture()
async def blackboard(blackboard_url: str) -> AsyncIterator[Blackboard]:
    from blackboard import Blackboard

    async with Blackboard.connect(blackboard_url) as bb:
        yield bb


@_async_fixture()
async def agent_memory(blackboard: Blackboard) -> AsyncIterator[AgentMemory]:
    from memory import AgentMemory

    async with AgentMemory(blackboard, AGENT, teams=[TEAM]) as mem:
        await mem.install_default_hierarchy()
        yield mem


@pytest.fixture()
def sync_agent_memory(blackboard_url: str) -> Iterator[SyncMemory]:
    from memory.sync import SyncMemory

    with SyncMemory.connect(blackboard_url, AGENT, teams=[TEAM]) as mem:
        mem.install_default_hierarchy()
        yield mem
