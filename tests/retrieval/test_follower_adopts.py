"""Issue 30: a follower does not embed again what the index role embedded or is embedding.

Before a background batch it reads the batch's stored vectors and adopts those of its
embedder at the entry's version; while an index worker beats and drains the partitions it
leaves the backlog to it, for a bounded time after the last vector it adopted. Without one
it embeds everything itself, at once. Real Redis, the real index role and heartbeat."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from recall_support import CountingEmbedder, GatedEmbedder

from blackboard import Blackboard
from retrieval import MemoryQuery, Retriever, embedding_queue
from retrieval.embedding_queue import DEFER_S
from workers.heartbeat import Heartbeat
from workers.indexer import ROLE, IndexRole

S = "agent:a1:working"
N = 30
DEFER = 4.0


async def until(pred: Callable[[], bool | Awaitable[bool]], what: str,
                limit_s: float = 10.0) -> float:
    """Seconds until ``pred`` holds (AssertionError past ``limit_s``)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        got = pred()
        if got if isinstance(got, bool) else await got:
            return time.monotonic() - t0
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@contextlib.asynccontextmanager
async def index_worker(bb: Blackboard, emb: GatedEmbedder) -> AsyncIterator[IndexRole]:
    """The index role, announced as a worker's is (a heartbeat every 0.5 s)."""
    role = IndexRole(bb, "idx", embedder=emb, block_ms=50)
    await role.start()
    beat = Heartbeat(bb, "idx", ROLE, 500)

    async def beating() -> None:
        while True:
            await beat.beat(set(range(bb.partitions)), {})
            await asyncio.sleep(0.5)

    task = asyncio.create_task(beating())
    await until(lambda: bb.stored_vectors.drained(range(bb.partitions), 3000), "presence")
    try:
        yield role
    finally:
        emb.gate.set()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await role.stop()
        await beat.stop()


async def _write(bb: Blackboard) -> None:
    sc = bb.scope(S)
    for i in range(N):
        await sc.write(f"note {i} about the garden and the weather")


async def test_follower_adopts_the_index_roles_vectors(bb: Blackboard) -> None:
    worker_emb = GatedEmbedder()
    mine = CountingEmbedder()  # the same name: the hashing embedder's
    async with index_worker(bb, worker_emb):
        await _write(bb)
        async with Retriever(bb, embedder=mine) as r:
            await r.follower.follow([S])
            assert r.engine.unembedded([S]) == {S: N}
            # the backlog waits for the live worker instead of running the model here
            await until(lambda: r.follower.stats().deferred_rounds > 0, "a deferred round")
            worker_emb.gate.set()
            await until(lambda: not r.engine.unembedded([S]), "every vector adopted")
            st = r.follower.stats()
            assert mine.texts == [] and r.engine.stats().embedded_texts == 0
            assert st.computed_embeddings == 0
            assert st.adopted_embeddings == N and r.engine.stats().adopted_vectors == N
            assert st.stored_embeddings == 0  # adopted vectors are not written back
            assert len(worker_emb.texts) == N  # each entry embedded once, by the worker
            hits = await r.recall("garden weather", [S])
            assert hits and all(h.has_vector for h in hits)
            assert mine.texts == ["garden weather"]  # the query alone


async def test_without_an_index_worker_the_follower_embeds_everything(bb: Blackboard) -> None:
    await _write(bb)
    mine = CountingEmbedder()
    async with Retriever(bb, embedder=mine) as r:
        await r.follower.follow([S])
        took = await until(lambda: not r.engine.unembedded([S]), "every vector embedded")
        assert took < DEFER_S  # nobody waited for: no deferral
        st = r.follower.stats()
        assert st.deferred_rounds == 0 and st.adopted_embeddings == 0
        assert st.computed_embeddings == N
        assert len(mine.texts) == N and len(set(mine.texts)) == N  # each once


async def test_a_stalled_index_worker_delays_the_backlog_a_bounded_time(
        bb: Blackboard, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedding_queue, "DEFER_S", DEFER)  # a shorter test, same code
    worker_emb = GatedEmbedder()  # never opened while the follower waits: a stuck model
    mine = CountingEmbedder()
    async with index_worker(bb, worker_emb):
        await _write(bb)
        async with Retriever(bb, embedder=mine) as r:
            await r.follower.follow([S])
            took = await until(lambda: not r.engine.unembedded([S]), "the backlog embedded")
            assert r.follower.stats().deferred_rounds > 0
            assert DEFER * 0.9 < took < DEFER + 3.0, took
            assert len(mine.texts) == N
            # a semantic recall does not wait for the worker either (the backlog of the
            # late writes would: its deferral began with their first)
            t0 = time.monotonic()
            await _more(bb)
            hits = await r.recall(MemoryQuery(query="late", consistency="semantic"), [S])
            assert time.monotonic() - t0 < DEFER / 2, "the semantic wait was deferred"
            assert hits and all(h.has_vector for h in hits)


async def _more(bb: Blackboard) -> None:
    sc = bb.scope(S)
    for i in range(80):  # more than a search embeds inline
        await sc.write(f"late note {i}")


async def test_a_search_adopts_stored_vectors_before_embedding_its_scopes(
        bb: Blackboard) -> None:
    worker_emb = GatedEmbedder()
    worker_emb.gate.set()
    mine = CountingEmbedder()
    await _write(bb)
    # no background embedding: only the search would embed what its scopes lack
    async with Retriever(bb, embedder=mine, background_embed=False) as r:
        await r.follower.follow([S])
        assert r.engine.unembedded([S]) == {S: N}
        role = IndexRole(bb, "idx", embedder=worker_emb, block_ms=50)
        await role.start()
        try:
            await until(lambda: _all_stored(bb), "the index role's vectors")
        finally:
            await role.stop()
        hits = await r.recall("garden weather", [S])
        assert hits and all(h.has_vector for h in hits)
        assert mine.texts == ["garden weather"]  # the query alone: every vector adopted
        assert r.follower.stats().adopted_embeddings == N


async def _all_stored(bb: Blackboard) -> bool:
    return all(e.embedder for e in await bb.scope(S).entries(limit=None))
