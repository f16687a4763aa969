"""Batches land whole or not at all (issue 24, item 5): ``write_batch`` / ``write_many`` are
one MULTI/EXEC; a process killed mid-batch leaves none of it; a batch a Redis Cluster
cannot make atomic is refused before anything is written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from blackboard import Blackboard, InvalidArgument, WriteRequest
from blackboard.batch_write import write_batch

ROOT = Path(__file__).resolve().parents[2]
A, B = "agent:a1:stm", "agent:a1:ltm:episodic"  # partitions 5 and 6 of 8


async def test_batch_over_scopes_is_one_transaction(bb: Blackboard, monkeypatch) -> None:
    seen: list[object] = []
    real = bb.client.pipeline

    def spy(*a: object, **kw: object):  # type: ignore[no-untyped-def]
        seen.append(kw.get("transaction"))
        return real(*a, **kw)

    monkeypatch.setattr(bb.client, "pipeline", spy)
    got = await write_batch(bb, [(A, [WriteRequest("x"), WriteRequest("y")]),
                                 (B, [WriteRequest("z")])])
    assert [[e.value for e in g] for g in got] == [["x", "y"], ["z"]]
    assert seen == [True]
    assert [e.value for e in await bb.scope(A).write_many(["p", "q"])] == ["p", "q"]
    assert seen == [True, True]


async def test_cluster_batch_over_partitions_refused_before_writing(bb: Blackboard) -> None:
    assert bb.scope(A).partition != bb.scope(B).partition
    bb.cluster = True  # what a Redis Cluster client says; one MULTI reaches one slot
    try:
        with pytest.raises(InvalidArgument, match="one partition"):
            await write_batch(bb, [(A, [WriteRequest("x")]), (B, [WriteRequest("y")])])
        assert await bb.scope(A).count() == 0
        assert len(await bb.scope(A).write_many(["one partition is fine"])) == 1
    finally:
        bb.cluster = False


_WRITER = """
import asyncio, sys
from blackboard import Blackboard, WriteRequest
async def main():
    async with Blackboard.connect(sys.argv[1], partitions=8) as bb:
        await bb.scope("agent:a1:stm").write_many([WriteRequest("w")])  # warm: scripts loaded
        print("ready", flush=True)
        for k in range(1000):
            await bb.scope("agent:a1:stm").write_many(
                [WriteRequest(f"{k}-{i}" + "x" * 200, tags=[f"b{k}"]) for i in range(1000)])
asyncio.run(main())
"""


@pytest.mark.process
def test_kill_9_of_an_in_process_writer_leaves_whole_batches(redis_url: str) -> None:
    r = redis.Redis.from_url(redis_url)
    r.flushall()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    landed = []
    for delay in (0.4, 0.8, 1.2):
        p = subprocess.Popen([sys.executable, "-c", _WRITER, redis_url], env=env,
                             stdout=subprocess.PIPE, cwd=ROOT)
        assert p.stdout is not None and p.stdout.readline().strip() == b"ready"
        time.sleep(delay)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
        counts = {k.decode(): int(v) for k, v in r.hgetall(
            "bb:{p5}:s:agent:a1:stm:tags").items() if k.startswith(b"b")}
        assert all(v == 1000 for v in counts.values()), counts
        landed.append(len(counts))
        r.flushall()
    assert sum(landed) > 0, landed  # the kills fell after some batches, i.e. mid-stream
    print(f"whole batches landed before each kill -9: {landed}")
    r.close()


async def test_on_a_real_cluster_one_partition_is_atomic_and_more_refused(cbb: Blackboard) -> None:
    got = await write_batch(cbb, [(A, [WriteRequest("x"), WriteRequest("y")])])
    assert [e.value for e in got[0]] == ["x", "y"]
    with pytest.raises(InvalidArgument, match="one partition"):
        await write_batch(cbb, [(A, [WriteRequest("z")]), (B, [WriteRequest("w")])])
    assert await cbb.scope(A).count() == 2 and await cbb.scope(B).count() == 0


async def test_delete_many_is_one_transaction_and_checks_every_id_first(
    bb: Blackboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    sc = bb.scope(A)
    es = await sc.write_many(["x", "y", "z"])
    with pytest.raises(InvalidArgument):
        await sc.delete_many([es[0].id, "not an id!"])
    assert await sc.count() == 3  # nothing deleted: the bad id was found before sending
    seen: list[object] = []
    real = bb.client.pipeline

    def spy(*a: object, **kw: object):  # type: ignore[no-untyped-def]
        seen.append(kw.get("transaction"))
        return real(*a, **kw)

    monkeypatch.setattr(bb.client, "pipeline", spy)
    assert await sc.delete_many([es[0].id, es[2].id, es[0].id, "01NOSUCHENTRY"]) == [
        True, True, False, False]
    assert seen == [True]
    assert [e.value for e in await sc.entries()] == ["y"]
    assert await sc.delete_many([]) == []
