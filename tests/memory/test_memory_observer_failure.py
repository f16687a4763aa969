"""An on_change subscription whose feed is damaged by raw commands ends with the error
(once, in ``error`` and ``failed``) instead of a reader retrying it forever (issue 24)."""

from __future__ import annotations

import asyncio

from blackboard import Blackboard, ScopeDamaged
from memory import AgentMemory
from memory.observers import lasting


async def test_a_damaged_feed_ends_the_subscription(bb: Blackboard) -> None:
    async with AgentMemory(bb, "a1") as mem:
        h = mem.on_change("agent:a1:working", lambda ev: None, block_ms=100)
        await h.ready()
        feed = bb.scope("agent:a1:working").keys.feed
        await bb.client.delete(feed)
        await bb.client.hset(feed, "x", "y")  # what an agent's raw HSET can do
        async with asyncio.timeout(5):
            err = await h.failed
        assert isinstance(err, ScopeDamaged) and h.error is err
        await asyncio.sleep(0.05)
        assert not h.running
        await h.stop()


def test_what_a_reader_retries_and_what_ends_it() -> None:
    from blackboard.errors import AccessDenied, LoginRefused, ServerError, ServerUnavailable

    assert not lasting(ServerUnavailable("connection reset"))
    assert not lasting(ConnectionResetError())
    for exc in (LoginRefused("WRONGPASS"), AccessDenied("NOPERM"), ScopeDamaged("WRONGTYPE"),
                ServerError("ERR Invalid stream ID")):
        assert lasting(exc), exc
