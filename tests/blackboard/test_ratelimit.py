"""The rate limiter (blackboard.ratelimit): one bucket per name however the take reaches
Redis -- on the limiter's own socket, or through the pool when that socket is busy, lost
or its script missing -- and never an answer read for another take."""

from __future__ import annotations

import asyncio

import redis

from blackboard import Blackboard
from blackboard.ratelimit import RateLimiter


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
