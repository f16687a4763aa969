"""Read-your-writes with the newest-id check in flight during the search: a write the
index has not applied when the search runs is caught up and searched again."""

from __future__ import annotations

import asyncio

from blackboard import Blackboard
from retrieval import Retriever

S = "agent:a1:working"


async def _stall_readers(r: Retriever) -> None:
    """Stop the follower's feed readers: only the recall's own check can bring writes in
    (as when a reader lags behind a burst)."""
    for t in r.follower._readers.values():
        t.cancel()
    await asyncio.gather(*r.follower._readers.values(), return_exceptions=True)


async def test_write_not_yet_applied_is_found(bb: Blackboard, redis_url: str) -> None:
    async with Retriever(bb, embedder=None) as r:
        await bb.scope(S).write("first note about tulips")
        assert [h.entry.value for h in await r.recall("tulips", [S])] == [
            "first note about tulips"]
        await _stall_readers(r)
        async with Blackboard.connect(redis_url) as other:  # another process's write
            await other.scope(S).write("second note about tulips")
        before = r.follower.stats().events
        got = {h.entry.value for h in await r.recall("tulips", [S])}
        assert got == {"first note about tulips", "second note about tulips"}
        assert r.follower.stats().events == before + 1  # applied by the recall's catch-up


async def test_no_write_means_no_second_search(bb: Blackboard) -> None:
    async with Retriever(bb, embedder=None) as r:
        await bb.scope(S).write("a note about tulips")
        await r.recall("tulips", [S])
        calls = []
        real = r.engine.search

        def spy(*a: object, **kw: object) -> object:
            calls.append(1)
            return real(*a, **kw)  # type: ignore[arg-type]

        r.engine.search = spy  # type: ignore[method-assign, assignment]
        await r.recall("tulips", [S])
        assert calls == [1]
