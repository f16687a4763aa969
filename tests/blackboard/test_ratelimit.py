"""The rate limiter (blackboard.ratelimit): one bucket per name however the take reaches
Redis -- on the limiter's own socket, or through the pool when that socket is busy, lost
or its script missing -- and never an answer read for another take; tokens leased ahead
spent without a round trip, never more than the bucket gave out."""

from __future__ import annotations

import asyncio

import pytest
import redis

from blackboard import Blackboard, InvalidArgument, ratelimit
from blackboard.ratelimit import RateLimiter, lease_for


async def test_takes_on_its_socket_share_the_bucket_with_the_pool(bb: Blackboard,
                                                                  redis_url: str) -> None:
    one = RateLimiter(bb, 0.001, 3)
    async with Blackboard.connect(redis_url) as other_bb:
        two = RateLimiter(other_bb, 0.001, 3)  # another process's limiter
        try:
            got = [await lim.take("u") for lim in (one, two, one, two)]
            assert [d.allowed for d in got] == [True, True, True, False]
            assert [d.remaining for d in got[:3]] == [2, 1, 0] and got[3].retry_after_ms > 0
            assert (await one.take("v")).allowed  # another name, another bucket
            assert (one.direct, one.pooled, two.direct, two.pooled) == (3, 0, 2, 0)
        finally:
            await two.aclose()
            await one.aclose()


async def test_concurrent_takes_are_exact(bb: Blackboard) -> None:
    lim = RateLimiter(bb, 0.001, 5)
    try:
        got = await asyncio.gather(*(lim.take("u") for _ in range(12)))
        assert sum(d.allowed for d in got) == 5
        assert lim.direct >= 1 and lim.pooled >= 1  # a busy socket sent the rest to the pool
        assert lim.direct + lim.pooled == 12
    finally:
        await lim.aclose()


async def test_a_lost_socket_or_script_falls_back_to_the_pool(
        bb: Blackboard, clean_redis: redis.Redis) -> None:
    lim = RateLimiter(bb, 0.001, 4)
    try:
        assert (await lim.take("u")).remaining == 3
        clean_redis.script_flush()  # NOSCRIPT on the socket: the pool's path loads it
        assert (await lim.take("u")).remaining == 2
        assert (lim.direct, lim.pooled) == (1, 1)
        assert lim._side.sock is None
        assert (await lim.take("u")).remaining == 1  # reopened
        # killed under it: closed, and the take answered through the pool
        assert lim._side.sock is not None
        clean_redis.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
        d = await lim.take("u")
        assert d.allowed and d.remaining == 0
        assert not (await lim.take("u")).allowed
    finally:
        await lim.aclose()
    assert lim._side.sock is None
    assert (await lim.take("w")).allowed  # closed: through the pool


def test_lease_size_follows_the_burst() -> None:
    assert [lease_for(b) for b in (1, 10, 39, 40, 100, 1_000_000)] == [1, 1, 1, 2, 5, 16]


async def test_a_lease_must_fit_the_bucket(bb: Blackboard) -> None:
    for bad in (0, 11):
        with pytest.raises(InvalidArgument, match=r"lease must be 1\.\.burst"):
            RateLimiter(bb, 1.0, 10, lease=bad)


async def test_leased_tokens_are_spent_without_a_round_trip(
        bb: Blackboard, clean_redis: redis.Redis) -> None:
    lim = RateLimiter(bb, 0.001, 100, lease=5)
    try:
        got = [await lim.take("u") for _ in range(6)]
        assert all(d.allowed for d in got)
        assert (lim.direct + lim.pooled, lim.local) == (2, 4)
        # The bucket gave out 10: the 6 spent and the 4 this process holds.
        assert int(float(clean_redis.hget(lim.key("u"), "tokens"))) == 90
        assert [d.remaining for d in got] == [99, 98, 97, 96, 95, 94]
    finally:
        await lim.aclose()


async def test_leases_of_two_processes_pass_no_more_than_the_bucket(
        bb: Blackboard, redis_url: str) -> None:
    one = RateLimiter(bb, 0.001, 10, lease=4)
    async with Blackboard.connect(redis_url) as other_bb:
        two = RateLimiter(other_bb, 0.001, 10, lease=4)  # another process's
        try:
            got = [await lim.take("u") for _ in range(12) for lim in (one, two)]
            assert sum(d.allowed for d in got) == 10
            assert all(not d.allowed and d.retry_after_ms > 0 for d in got[-4:])
        finally:
            await two.aclose()
            await one.aclose()


async def test_concurrent_takes_share_one_lease(bb: Blackboard) -> None:
    lim = RateLimiter(bb, 0.001, 100, lease=5)
    try:
        got = await asyncio.gather(*(lim.take("u") for _ in range(12)))
        assert all(d.allowed for d in got)
        # 12 takes, 5 a round trip: 3 round trips, not one each.
        assert (lim.direct + lim.pooled, lim.local) == (3, 9)
    finally:
        await lim.aclose()


async def test_a_stale_lease_is_dropped_not_spent(
        bb: Blackboard, clean_redis: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    lim = RateLimiter(bb, 0.001, 100, lease=5)
    try:
        assert (await lim.take("u")).allowed
        monkeypatch.setattr(ratelimit, "LEASE_S", 0.0)
        await asyncio.sleep(0.01)
        assert (await lim.take("u")).allowed
        assert (lim.direct + lim.pooled, lim.local) == (2, 0)
        assert int(float(clean_redis.hget(lim.key("u"), "tokens"))) == 90
    finally:
        await lim.aclose()


async def test_a_refused_lease_leaves_each_take_its_own_refusal(bb: Blackboard) -> None:
    lim = RateLimiter(bb, 0.001, 40, lease=2)
    try:
        got = await asyncio.gather(*(lim.take("u") for _ in range(44)))
        assert sum(d.allowed for d in got) == 40
        assert all(d.retry_after_ms > 0 for d in got if not d.allowed)
    finally:
        await lim.aclose()
