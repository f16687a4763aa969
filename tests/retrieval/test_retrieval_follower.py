"""The index follower on a real Redis: bootstrap, feed events, embeddings stored once,
restart without re-embedding, a changed embedder, snapshots."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import numpy as np
import pytest
from recall_support import CountingEmbedder

from blackboard import Blackboard
from retrieval import MemoryQuery, Retriever, SearchEngine
from retrieval.follower import IndexFollower
from retrieval.snapshot import load_snapshot

S = "agent:a1:working"


async def until(pred: Callable[[], Awaitable[bool]], what: str, limit_s: float = 5.0) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if await pred():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


async def stored_vectors(bb: Blackboard, scope: str, name: str) -> int:
    return sum(e.embedder == name for e in await bb.scope(scope).entries(limit=None))


def dense_ids(r: Retriever, scope: str) -> set[str]:
    cat = r.engine._scopes[scope]
    assert cat.dense is not None
    return {cat.entries[i].id for i in cat.dense.ids().tolist()}  # type: ignore[union-attr]


def bm25_ids(r: Retriever, scope: str, text: str) -> set[str]:
    cat = r.engine._scopes[scope]
    hits = cat.bm25.search(text, 50, None)
    return {cat.entries[i].id for i in hits.ids.tolist()}  # type: ignore[union-attr]


async def test_bootstrap_follow_and_store_embeddings_once(bb: Blackboard) -> None:
    sc = bb.scope(S)
    old = [await sc.write(f"old note {i} about gardening") for i in range(5)]
    emb = CountingEmbedder()
    async with Retriever(bb, embedder=emb) as r:
        hits = await r.recall("gardening", [S])
        assert {h.entry.id for h in hits} == {e.id for e in old}
        assert r.engine.stats().embedded_texts == 5
        await until(lambda: _eq(stored_vectors(bb, S, emb.name), 5), "vectors stored back")
        new = await sc.write("a new note about cycling")
        await until(lambda: _true(r.follower.applied(S) == new.event_id), "follower applies")
        assert r.engine.get(new.id) is not None
        await until(lambda: _eq(stored_vectors(bb, S, emb.name), 6), "new vector stored")
        assert r.engine.stats().embedded_texts == 6  # each entry embedded exactly once
        assert r.follower.stats().bootstrapped == 5


async def _eq(a: Awaitable[int], b: int) -> bool:
    return await a == b


async def _true(v: bool) -> bool:
    return v


async def test_delete_and_update_leave_both_indexes(bb: Blackboard) -> None:
    sc = bb.scope(S)
    keep = await sc.write("the blue whale is the largest animal")
    gone = await sc.write("the red fox jumps over the fence")
    upd = await sc.write("a walrus sleeps on the ice")
    async with Retriever(bb, embedder=CountingEmbedder()) as r:
        await r.recall("anything", [S])
        assert {gone.id, upd.id, keep.id} <= dense_ids(r, S)
        await sc.delete(gone.id)
        await sc.update(upd.id, value="a penguin swims under the ice")
        hits = await r.recall("red fox fence", [S])
        assert gone.id not in {h.entry.id for h in hits}
        assert gone.id not in dense_ids(r, S) and not bm25_ids(r, S, "fox fence")
        hits = await r.recall("walrus", [S])
        assert upd.id not in {h.entry.id for h in hits}
        assert upd.id not in bm25_ids(r, S, "walrus")
        assert upd.id in bm25_ids(r, S, "penguin")
        got = await r.recall(MemoryQuery(query="penguin swims", alpha=1.0), [S])
        assert got[0].entry.id == upd.id and got[0].entry.value.startswith("a penguin")
        # the vector is the new text's, not the old one kept by the update script
        cat = r.engine._scopes[S]
        assert cat.dense is not None
        vec = cat.dense.reconstruct(np.asarray([cat.row_of[upd.id]]))[0]
        want = r.engine.embedder.embed([r.engine.text_fn(got[0].entry)])[0]  # type: ignore[union-attr]
        assert float(vec @ want) > 0.999
        assert keep.id in dense_ids(r, S)


async def test_ttl_expiry_and_reinforce_events(bb: Blackboard) -> None:
    sc = bb.scope(S)
    # long enough to outlive the first recall on a loaded machine (0.3 s did not, under
    # the quick tier's parallel load); then waited out to the millisecond
    e = await sc.write("short lived memo", ttl=2.0)
    f = await sc.write("durable memo")
    emb = CountingEmbedder()
    async with Retriever(bb, embedder=emb) as r:
        assert len(await r.recall("memo", [S])) == 2
        await sc.reinforce(f.id, boost=0.0)
        hits = await r.recall("durable", [S])
        assert hits[0].entry.reinforcements == 1
        assert r.engine.stats().embedded_texts == 2  # a reinforcement costs no model call
        await asyncio.sleep(max(0.0, (e.expires_at - bb.now_ms()) / 1000) + 0.1)
        await bb.sweep()
        hits = await r.recall("memo", [S])
        assert [h.entry.id for h in hits] == [f.id]
        assert r.engine.get(e.id) is None


async def test_restart_reuses_stored_embeddings(bb: Blackboard) -> None:
    sc = bb.scope(S)
    for i in range(20):
        await sc.write(f"entry number {i} about databases")
    first = CountingEmbedder()
    async with Retriever(bb, embedder=first) as r:
        await r.recall("databases", [S])
        await until(lambda: _eq(stored_vectors(bb, S, first.name), 20), "vectors stored")
    assert first.calls >= 1
    second = CountingEmbedder()
    async with Retriever(bb, embedder=second) as r2:
        hits = await r2.recall(MemoryQuery(query="databases", max_results=20), [S])
        assert len(hits) == 20 and all(h.dense is not None for h in hits)
        assert r2.engine.stats().embedded_texts == 0
        assert second.texts == ["databases"]  # only the query was embedded


async def test_changed_embedder_reembeds_and_never_mixes(bb: Blackboard) -> None:
    sc = bb.scope(S)
    for i in range(4):
        await sc.write(f"fact {i} on astronomy")
    old = CountingEmbedder("old-model")
    async with Retriever(bb, embedder=old) as r:
        await r.recall("astronomy", [S])
        await until(lambda: _eq(stored_vectors(bb, S, "old-model"), 4), "old vectors")
    new = CountingEmbedder("new-model")
    async with Retriever(bb, embedder=new) as r2:
        hits = await r2.recall("astronomy", [S])
        assert len(hits) == 4
        assert r2.engine.stats().embedded_texts == 4  # foreign vectors were not used
        await until(lambda: _eq(stored_vectors(bb, S, "new-model"), 4), "new vectors")


async def test_snapshot_round_trip_and_gap_replay(bb: Blackboard, tmp_path: Path) -> None:
    sc = bb.scope(S)
    es = [await sc.write(f"snapshot entry {i} about rivers") for i in range(6)]
    snap = tmp_path / "idx"
    emb = CountingEmbedder()
    async with Retriever(bb, embedder=emb, snapshot_dir=snap, write_back=False) as r:
        await r.recall("rivers", [S])
    loaded = load_snapshot(snap)
    assert loaded is not None and len(loaded.entries[S]) == 6
    assert loaded.manifest.scopes[S] == es[-1].event_id
    assert all(e.embedding is not None for e in loaded.entries[S])
    # written while no follower ran: replayed from the feed on start
    late = await sc.write("late entry about rivers and lakes")
    await sc.delete(es[0].id)
    emb2 = CountingEmbedder()
    async with Retriever(bb, embedder=emb2, snapshot_dir=snap, write_back=False) as r2:
        hits = await r2.recall(MemoryQuery(query="rivers", max_results=20), [S])
        ids = {h.entry.id for h in hits}
        assert late.id in ids and es[0].id not in ids and len(ids) == 6
        st = r2.follower.stats()
        assert st.from_snapshot == 6 and st.bootstrapped == 0
        assert r2.engine.stats().embedded_texts == 1  # only the late entry


async def test_stale_snapshot_falls_back_to_redis(bb: Blackboard, tmp_path: Path) -> None:
    sc = bb.scope(S)
    await sc.write("first entry about trains")
    snap = tmp_path / "idx"
    async with Retriever(bb, embedder=CountingEmbedder(), snapshot_dir=snap) as r:
        await r.recall("trains", [S])
    for i in range(3):
        await sc.write(f"more about trains {i}")
    # the snapshot's position is trimmed away
    await bb.client.xtrim(sc.keys.feed, maxlen=1, approximate=False)
    async with Retriever(bb, embedder=CountingEmbedder(), snapshot_dir=snap) as r2:
        hits = await r2.recall("trains", [S])
        assert len(hits) == 4
        st = r2.follower.stats()
        assert st.from_snapshot == 0 and st.bootstrapped == 4


async def test_sync_times_out_but_searches(bb: Blackboard) -> None:
    engine = SearchEngine(None)
    f = IndexFollower(bb, engine)
    await f.follow([S])
    await bb.scope(S).write("x")
    assert await f.sync([S], wait_s=5.0) is True
    lock = f._lock
    async with lock:  # a catch-up that cannot run
        await bb.scope(S).write("y")
        assert await f.sync([S], wait_s=0.05) is False
    assert f.stats().sync_timeouts == 1
    await f.aclose()


@pytest.mark.parametrize("n", [1200])
async def test_bootstrap_pages_large_scopes(bb: Blackboard, n: int) -> None:
    await bb.scope(S).write_many([f"bulk {i}" for i in range(n)])
    async with Retriever(bb, embedder=None) as r:
        hits = await r.recall(MemoryQuery(query="bulk", max_results=5), [S])
        assert len(hits) == 5 and r.engine.stats().entries == n


async def test_background_embedding_leaves_the_loop_and_the_engine_free(bb: Blackboard) -> None:
    # A follower embeds new entries in a thread, outside the engine's lock: the event loop
    # (a gateway's requests) and searches of other scopes go on while the model runs, and
    # a recall of the scope waits for the batch, asynchronously, instead of embedding it
    # again.
    class Slow(CountingEmbedder):
        def embed(self, texts: list[str]) -> np.ndarray:  # type: ignore[type-arg]
            if len(texts) > 1:
                time.sleep(0.6)  # a model busy with a batch
            return super().embed(texts)

    other = "agent:a1:stm"
    emb = Slow()
    async with Retriever(bb, embedder=emb) as r:
        await bb.scope(other).write("other scope words")
        await r.recall("warm", [S, other])
        await bb.scope(S).write_many([f"fresh note {i} about tulips" for i in range(8)])
        await until(lambda: _true(bool(r.engine._out)), "a batch being embedded")
        t0 = time.monotonic()
        await asyncio.sleep(0.01)
        hits = r.engine.search(MemoryQuery(query="other", max_results=5), [other])
        assert time.monotonic() - t0 < 0.3, "the loop or the engine waited for the model"
        assert [h.entry.text for h in hits] == ["other scope words"]
        hits = await r.recall(MemoryQuery(query="tulips", max_results=10), [S])
        assert len(hits) == 8 and all(h.dense is not None for h in hits)
        # the recall waited for the batch: each text was embedded once, in the background
        assert [emb.texts.count(f"fresh note {i} about tulips") for i in range(8)] == [1] * 8


async def test_one_shot_recall_embeds_no_backlog_and_closes_at_once(bb: Blackboard) -> None:
    # `blackboard recall` (issue 30): with background embedding off, following the scopes
    # does not start the model on the backlog (more than a search embeds inline), and
    # closing right after the recall does not wait out the readers' blocking reads, even
    # those still connecting when cancelled (a swallowed cancellation is asked again).
    emb = CountingEmbedder()
    await bb.scope(S).write_many([f"backlog note {i}" for i in range(100)])
    r = Retriever(bb, embedder=emb, background_embed=False, block_ms=5000)
    try:
        hits = await r.recall(MemoryQuery(query="backlog", max_results=3), [S])
        assert len(hits) == 3
        await asyncio.sleep(0.2)  # a background batch, had one started, would be out now
        assert emb.texts == [], "a one-shot recall embedded the backlog"
    finally:
        t0 = time.monotonic()
        await r.aclose()
    assert time.monotonic() - t0 < 2.5, "closing waited for the readers' 5 s block"
