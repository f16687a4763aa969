"""The ``index`` role (embedding off the write path), the reindex helper and the
``blackboard recall`` command."""

from __future__ import annotations

import asyncio
import json

from recall_support import CountingEmbedder
from typer.testing import CliRunner

from blackboard import Blackboard
from cli.app import app
from memory import AgentMemory, MemoryLevel
from workers.indexer import IndexRole, bind_reembed, run_index_batch

S = "agent:a1:working"


async def test_run_index_batch_embeds_only_what_lacks_a_current_vector(bb: Blackboard) -> None:
    await bb.ensure_groups(["index"])
    sc = bb.scope(S)
    a = await sc.write("alpha")
    b = await sc.write("beta", embedding=b"\0" * 16, embedder="other")
    emb = CountingEmbedder()
    c = await sc.write("gamma", embedding=emb.embed(["gamma"]).tobytes(), embedder=emb.name)
    emb.texts.clear()
    events = await sc.events()
    assert await run_index_batch(bb, events, emb) == 2
    assert sorted(emb.texts) == ["alpha", "beta"]
    got = {e.id: e for e in await sc.get_many([a.id, b.id, c.id]) if e}
    assert all(e.embedder == emb.name and len(e.embedding or b"") == emb.dim * 4
               for e in got.values())
    assert await run_index_batch(bb, events, emb) == 0  # a replay costs nothing
    await sc.update(a.id, value="alpha two")  # text changed: re-embedded
    assert await run_index_batch(bb, (await sc.events())[-1:], emb) == 1


async def test_index_role_consumes_and_acks(bb: Blackboard) -> None:
    emb = CountingEmbedder()
    role = IndexRole(bb, "idx-1", embedder=emb, block_ms=100)
    await role.start()
    try:
        es = await bb.scope(S).write_many([f"note {i}" for i in range(10)])
        for _ in range(200):
            got = await bb.scope(S).get_many([e.id for e in es])
            if all(e is not None and e.embedder == emb.name for e in got):
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("index role did not embed the entries")
    finally:
        await role.stop()
    assert role.embedded == 10 and role.failures == 0
    assert await bb.vector_queue(bb.scope(S).partition).length() == 0
    # the role reads its queue, not the bus: no consumer group holds the bus back
    assert "index" not in {g.role for g in await bb.bus(bb.scope(S).partition).groups()}


async def test_reembed_binding_for_maintenance(bb: Blackboard) -> None:
    es = await bb.scope(S).write_many(["x one", "x two", "x three"])
    emb = CountingEmbedder()
    hook = bind_reembed(bb, emb)
    assert await hook(es) == 3 and emb.calls == 1


def test_cli_recall_json_and_table(bb: Blackboard, redis_url: str) -> None:
    async def seed() -> None:
        async with Blackboard.connect(redis_url, partitions=8) as b2, \
                AgentMemory(b2, "a1", teams=["t1"], default_retriever=False) as m:
            await m.store("the build failed on step three", tags={"action", "failure"})
            await m.store("Bob likes chess", level=MemoryLevel.SEMANTIC, tags={"fact"})
            await m.store("team build policy", level=None, team="t1")
            await b2.scope("agent:zz:working").write("private build secret")

    asyncio.run(seed())
    run = CliRunner().invoke
    res = run(app, ["recall", "build failed", "--agent", "a1", "--team", "t1", "--json",
                    "--redis-url", redis_url])
    assert res.exit_code == 0, res.output
    hits = json.loads(res.stdout)
    assert hits[0]["value"] == "the build failed on step three"
    assert {"score", "fused", "dense", "bm25", "strength", "recency"} <= hits[0].keys()
    assert "private build secret" not in {h["value"] for h in hits}
    assert "team build policy" in {h["value"] for h in hits}
    res = run(app, ["recall", "", "--agent", "a1", "--lens", "facts_about:Bob", "--json",
                    "--redis-url", redis_url])
    assert [h["value"] for h in json.loads(res.stdout)] == ["Bob likes chess"]
    res = run(app, ["recall", "build", "--agent", "a1", "--level", "working", "--explain",
                    "--redis-url", redis_url])
    assert res.exit_code == 0 and "score" in res.stdout and "fused=" in res.stdout
