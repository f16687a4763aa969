"""Reads compare the scripts' timestamps (Redis TIME) with Redis's clock, not the client's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
import redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from blackboard import Blackboard, NotFound
from blackboard.clock import ServerClock
from blackboard.reads import EntryRef
from workers.heartbeat import Heartbeat, live_workers

_real_time = time.time


def _skew(monkeypatch: pytest.MonkeyPatch, seconds: float) -> Callable[[], None]:
    """This process's wall clock off by ``seconds``; returns the undo."""
    monkeypatch.setattr(time, "time", lambda: _real_time() + seconds)
    return lambda: monkeypatch.setattr(time, "time", _real_time)


def _server_ms(url: str) -> float:
    r = redis.Redis.from_url(url)
    sec, usec = r.time()
    r.close()
    return sec * 1000 + usec / 1000


def _assert_reads_server_time(bb: Blackboard, url: str) -> None:
    """The board's clock agrees with the server's TIME within 100 ms: that TIME falls
    between the board's reading before and after asking it (a stall between one reading
    and the question, e.g. a loaded CI core, is no clock error)."""
    before = bb.now_ms()
    server = _server_ms(url)
    after = bb.now_ms()
    assert before - 100 < server < after + 100, (before, server, after)


async def test_offset_is_measured_on_connect(clean_redis: redis.Redis, redis_url: str) -> None:
    async with Blackboard.connect(redis_url, partitions=8) as bb:
        assert abs(bb.clock.offset_ms) < 1000  # same machine
        assert 0 <= bb.clock.uncertainty_ms < 100
        _assert_reads_server_time(bb, redis_url)


@pytest.mark.parametrize("skew_s", [-3600.0, 3600.0])
async def test_a_skewed_client_reads_the_server_clock(
    clean_redis: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch, skew_s: float
) -> None:
    _skew(monkeypatch, skew_s)
    async with Blackboard.connect(redis_url, partitions=8) as bb:
        assert abs(bb.clock.offset_ms + skew_s * 1000) < 1000
        _assert_reads_server_time(bb, redis_url)
        s = bb.scope("agent:a1:working")
        live = await s.write("live for a minute", ttl=60)
        short = await s.write("gone in 0.3 s", ttl=0.3)
        # An hour ahead, the client's own clock would call `live` expired; an hour behind,
        # it would keep `short` alive after its TTL.
        assert (await s.get(live.id)).id == live.id
        await asyncio.sleep(0.5)
        with pytest.raises(NotFound):
            await s.get(short.id)
        assert [e.id if e else None for e in await s.get_many([live.id, short.id])] == [
            live.id,
            None,
        ]
        assert await s.count() == 1
        part = s.partition
        got = await bb.reads.fetch(part, [EntryRef(s.id, live.id), EntryRef(s.id, short.id)])
        assert [e.id if e else None for e in got] == [live.id, None]


async def test_heartbeats_compare_on_one_clock(
    clean_redis: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker on a machine ten seconds behind beats; a peer with a right clock counts it
    # live. On their own clocks the beat would look ten seconds old (three intervals = 3 s).
    undo = _skew(monkeypatch, -10.0)
    slow = await Blackboard.connect(redis_url, partitions=8)
    try:
        await Heartbeat(slow, "w-behind", "summarize", 1000).beat({0}, {})
        undo()
        async with Blackboard.connect(redis_url, partitions=8) as peer:
            assert await live_workers(peer, "summarize", 1000) == 1
    finally:
        await slow.close()


async def test_resync_runs_in_the_background(clean_redis: redis.Redis, redis_url: str) -> None:
    clock = ServerClock(resync_s=0.0)
    r = redis.asyncio.Redis.from_url(redis_url)
    try:
        await clock.sync(r)
        clock.offset_ms = 5_000.0  # as if the local clock had been stepped since
        clock.now_ms()  # stale: schedules a re-sync, answers at once
        assert clock._task is not None
        await clock._task
        assert abs(clock.offset_ms) < 1000
        await clock.close()
    finally:
        await r.aclose()


async def test_a_failed_resync_keeps_the_offset(clean_redis: redis.Redis, redis_url: str) -> None:
    clock = ServerClock(resync_s=0.0)
    r = redis.asyncio.Redis.from_url(redis_url)
    await clock.sync(r)
    before = clock.offset_ms
    await r.aclose()
    # nothing listens on port 1; no retries, so the attempt fails at once
    clock._client = redis.asyncio.Redis(port=1, retry=Retry(NoBackoff(), 0))
    clock.now_ms()
    assert clock._task is not None
    await clock._task
    assert clock.offset_ms == before
    await clock._client.aclose()


@pytest.mark.cluster
async def test_offset_on_a_cluster(cbb: Blackboard) -> None:
    assert abs(cbb.clock.offset_ms) < 1000
    s = cbb.scope("agent:a1:working")
    e = await s.write("x", ttl=60)
    assert (await s.get(e.id)).id == e.id
