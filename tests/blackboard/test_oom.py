"""Issue 23 item 2 on the substrate: Redis over ``maxmemory`` (``noeviction``) refuses every
data write whole, before any change, with :class:`OutOfMemory`; capacity eviction never lets
a write pass the limit; the relay keeps what it cannot publish and publishes it once memory
is freed (before: the write evicted first and then grew on, and the relay dropped each item
as 'invalid')."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
import redis

from blackboard import Blackboard, ScopePolicy
from blackboard.errors import OutOfMemory
from blackboard.keys import PartitionKeys
from blackboard.relay import Inbox, Relays
from blackboard.server import RedisServer

pytestmark = pytest.mark.redis  # a redis-server of its own (its maxmemory is changed)

SCOPE = "agent:a1:working"


@pytest.fixture()
def server() -> Iterator[RedisServer]:
    with RedisServer() as s:
        yield s


@pytest.fixture()
def raw(server: RedisServer) -> Iterator[redis.Redis]:
    r = redis.Redis.from_url(server.url)
    yield r
    r.close()


@pytest.fixture()
async def board(server: RedisServer) -> AsyncIterator[Blackboard]:
    async with Blackboard.connect(server.url, partitions=4) as b:
        yield b


def _dump(r: redis.Redis) -> dict[bytes, bytes | None]:
    return {k: r.dump(k) for k in r.scan_iter()}


def _used(r: redis.Redis) -> int:
    return int(r.info("memory")["used_memory"])


async def test_a_write_at_capacity_is_refused_whole_over_the_limit(
        board: Blackboard, raw: redis.Redis) -> None:
    s = board.scope(SCOPE)
    await s.set_policy(ScopePolicy(max_entries=5))
    first = [await s.write({"i": i}, tags={"t"}, key=f"k{i}") for i in range(5)]
    before = _dump(raw)
    raw.config_set("maxmemory", 1)
    try:
        for attempt in (
            lambda: s.write({"new": 1}, tags={"t"}),  # would evict the weakest first
            lambda: s.write({"i": 0}, key="k0"),  # an upsert
            lambda: s.update(first[1].id, value="changed"),
            lambda: s.reinforce(first[2].id),
            lambda: s.write_many([{"a": 1}, {"b": 2}]),
        ):
            with pytest.raises(OutOfMemory) as err:
                await attempt()
            assert "maxmemory" in str(err.value) and "\n" not in str(err.value)
            assert "maxmemory" in (err.value.redis_message or "")  # Redis's own words
        assert _dump(raw) == before  # nothing changed, not even the evictions
    finally:
        raw.config_set("maxmemory", 0)
    assert (await s.write({"new": 1})).version == 1  # and it works again once freed
    assert await s.count() == 5


async def test_capacity_eviction_never_passes_the_limit(
        board: Blackboard, raw: redis.Redis) -> None:
    # Measured before: writes into a full scope evicted first (a write that frees nothing
    # for Redis: the evicted entries are retired until the dataflow took them in) and then
    # wrote on, to 24x maxmemory. Now the first write over the limit is refused.
    s = board.scope(SCOPE)
    await s.set_policy(ScopePolicy(max_entries=20))
    pad = "x" * 20_000
    for i in range(20):
        await s.write({"i": i, "pad": pad})
    limit = _used(raw) + 300_000
    raw.config_set("maxmemory", limit)
    try:
        written = 0
        with pytest.raises(OutOfMemory):
            for _ in range(200):
                await s.write({"pad": pad})
                written += 1
        peak = _used(raw)
    finally:
        raw.config_set("maxmemory", 0)
    print(f"capacity eviction: {written} writes until refused, used {peak} bytes, "
          f"maxmemory {limit} ({peak / limit:.2f}x)")
    assert written < 200
    assert peak <= limit + 2 * len(pad) + 50_000  # one write's worth over at most


async def test_the_relay_keeps_what_it_cannot_publish(
        board: Blackboard, raw: redis.Redis) -> None:
    s = board.scope(SCOPE)
    ids = [(await s.write({"i": i})).id for i in range(50)]
    pk = PartitionKeys(s.partition)
    raw.config_set("maxmemory", 1)
    try:
        with pytest.raises(OutOfMemory):
            await Inbox(board, s.partition).relay()
        assert raw.llen(pk.inbox) == 50 and raw.xlen(pk.bus) == 0
    finally:
        raw.config_set("maxmemory", 0)
    r = await Inbox(board, s.partition).relay()
    assert (r.relayed, r.stale, r.invalid, r.left) == (50, 0, 0, 0)
    assert sorted(f[b"entry"].decode() for _, f in raw.xrange(pk.bus)) == sorted(ids)


async def test_the_relay_loop_retries_with_backoff_until_memory_is_freed(
        board: Blackboard, raw: redis.Redis) -> None:
    s = board.scope(SCOPE)
    ids = [(await s.write({"i": i})).id for i in range(30)]
    pk = PartitionKeys(s.partition)
    relays = Relays(board, block_s=0.2)
    raw.config_set("maxmemory", 1)
    try:
        relays.acquire(s.partition)
        await asyncio.sleep(1.5)
        errors = relays.counters.errors
        assert 2 <= errors <= 6  # backing off: 0.1, 0.2, 0.4, 0.8 s ...
        assert relays.counters.invalid == relays.counters.relayed == 0
        assert raw.llen(pk.inbox) + raw.llen(pk.relaying) == 30
    finally:
        raw.config_set("maxmemory", 0)
    try:
        for _ in range(100):
            if raw.xlen(pk.bus) == 30:
                break
            await asyncio.sleep(0.1)
        assert sorted(f[b"entry"].decode() for _, f in raw.xrange(pk.bus)) == sorted(ids)
        assert relays.counters.relayed == 30 and relays.counters.invalid == 0
    finally:
        relays.release(s.partition)
        await relays.close()


async def test_beats_go_on_over_the_limit_and_only_beats(
        board: Blackboard, raw: redis.Redis) -> None:
    # A worker waiting for memory stays listed and keeps its leases: its heartbeat record
    # and lease-table beat are written over maxmemory (beat.lua, allow-oom), nothing else.
    from blackboard.errors import ServerError
    from blackboard.scripts import run_script

    s = board.scope(SCOPE)
    await s.write("x")
    raw.config_set("maxmemory", 1)
    try:
        await board.presence.beat("w1", "summarize", {"id": "w1", "beat_at": 5}, 5, 60_000,
                                  first=True)
        rows = await board.lease_table.beat_and_read("proc1", 7, [("summarize", "w1")])
        with pytest.raises(OutOfMemory):
            await s.write("y")
        before = _dump(raw)
        for key in (s.keys.ix, s.keys.entry("x1"), "bb:workersX", s.keys.part.bus):
            with pytest.raises(ServerError, match="BAD_BEAT"):
                await run_script(board.client, "beat", [key], ["hset", "", "f", "v"])
        assert _dump(raw) == before
    finally:
        raw.config_set("maxmemory", 0)
    assert raw.hget("bb:workers:w1", "beat_at") == b"5"
    assert raw.zscore("bb:workers:role:summarize", "w1") == 5
    assert raw.sismember("bb:workers:roles", "summarize")
    assert raw.pttl("bb:workers:w1") > 50_000
    assert rows.beats.get("proc1") == 7 and raw.hget("bb:leases", "b:proc1") == b"7"
