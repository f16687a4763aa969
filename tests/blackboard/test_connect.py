"""Connecting: pinned partitions, unsafe-server warnings, unreachable servers, NOSCRIPT."""

from __future__ import annotations

import warnings

import pytest
import redis

from blackboard import (
    Blackboard,
    ClientSettings,
    ConfigMismatch,
    InvalidArgument,
    ServerUnavailable,
    WriteRequest,
)
from blackboard.keys import CONFIG
from blackboard.server import RedisServer, free_port


async def test_partitions_pinned_at_first_use(
    bb: Blackboard, redis_url: str, clean_redis: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert clean_redis.hget(CONFIG, "partitions") == b"8"
    with pytest.raises(ConfigMismatch):
        await Blackboard.connect(redis_url, partitions=4)
    with pytest.raises(ConfigMismatch):
        await Blackboard.connect(redis_url, settings=ClientSettings(partitions=16))
    monkeypatch.delenv("BLACKBOARD_PARTITIONS", raising=False)
    # A client that did not ask for a count follows the pinned one (not its default of 16).
    async with Blackboard.connect(redis_url) as other:
        assert other.partitions == 8
        assert other.scope("agent:a1:working").partition == bb.scope("agent:a1:working").partition
    assert clean_redis.hget(CONFIG, "partitions") == b"8"
    async with Blackboard.connect(redis_url, partitions=8) as same:
        assert same.partitions == 8


async def test_connect_needs_a_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BLACKBOARD_REDIS_URL", raising=False)
    with pytest.raises(InvalidArgument):
        await Blackboard.connect()


@pytest.mark.parametrize("cluster", [None, False])
async def test_dead_port_is_server_unavailable(cluster: bool | None) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    s = ClientSettings(retries=0, connect_timeout=0.5, socket_timeout=0.5)
    with pytest.raises(ServerUnavailable):
        await Blackboard.connect(url, settings=s, cluster=cluster)


@pytest.mark.redis  # starts its own redis-server
def test_warns_on_unsafe_server() -> None:
    args = ("--appendonly", "no", "--maxmemory-policy", "allkeys-lru")
    with RedisServer(extra_args=args) as srv:

        async def go() -> list[str]:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                async with Blackboard.connect(srv.url, partitions=2):
                    pass
            return [str(x.message) for x in w if x.category is RuntimeWarning]

        import asyncio

        msgs = asyncio.run(go())
    assert any("appendonly no" in m for m in msgs), msgs
    assert any("allkeys-lru" in m for m in msgs), msgs


async def test_no_warning_on_safe_server(clean_redis: redis.Redis, redis_url: str) -> None:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        async with Blackboard.connect(redis_url, partitions=8):
            pass
    assert not [x for x in w if x.category is RuntimeWarning]


async def test_noscript_recovery(board: Blackboard) -> None:
    s = board.scope("agent:a1:working")
    e = await s.write("before")
    await board.client.script_flush()
    assert (await s.write("single")).version == 1
    await board.client.script_flush()
    many = await s.write_many([WriteRequest(i, tags={"t"}) for i in range(20)])
    assert len(many) == 20 and await s.count() == 22
    assert await s.tags() == {"t": 20}
    assert len(await s.events()) == 22  # the re-sent batch did not write anything twice
    await board.client.script_flush()
    assert (await s.update(e.id, value="after")).version == 2
    await board.client.script_flush()
    assert await s.delete(e.id)


async def test_zero_partitions_is_refused_not_defaulted(redis_url: str) -> None:
    from blackboard import InvalidArgument

    with pytest.raises(InvalidArgument, match="partitions"):
        await Blackboard.connect(redis_url, partitions=0)
