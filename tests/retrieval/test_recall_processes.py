"""Read-your-writes across OS processes: a writer process stores and then signals; this
process's recall, started after the signal, must see the write."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import pytest
from recall_support import CountingEmbedder

from blackboard import Blackboard
from memory import AgentMemory, MemoryQuery
from retrieval import Retriever

pytestmark = pytest.mark.process  # a writer process

WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from blackboard import Blackboard
    from memory import AgentMemory

    async def main(url, n):
        async with Blackboard.connect(url, partitions=8) as bb:
            async with AgentMemory(bb, "a1", teams=["t1"], default_retriever=False) as m:
                for i in range(n):
                    team = "t1" if i % 2 else None
                    e = await m.store(f"observation {i}: zebra number {i} crossed",
                                      level=None if team else "working", team=team)
                    print(e.id, flush=True)           # the signal: acknowledged
                    sys.stdin.readline()              # wait for the reader's turn

    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
    """
)


async def test_recall_sees_writes_of_another_process(bb: Blackboard, redis_url: str) -> None:
    n = 12
    r = Retriever(bb, embedder=CountingEmbedder(), wait_timeout=5.0)
    async with AgentMemory(bb, "a1", teams=["t1"], retriever=r) as mem:
        assert await mem.recall("zebra") == []  # index built and following before writes
        proc = subprocess.Popen(  # noqa: ASYNC220 - a long-lived peer process, not awaited
            [sys.executable, "-c", WRITER, redis_url, str(n)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        try:
            assert proc.stdin is not None and proc.stdout is not None
            for i in range(n):
                line = await asyncio.to_thread(proc.stdout.readline)
                entry_id = line.strip()
                assert entry_id, f"writer ended early (round {i})"
                hits = await mem.recall(MemoryQuery(query=f"zebra number {i}", max_results=50))
                assert entry_id in {h.entry.id for h in hits}, f"round {i} not visible"
                proc.stdin.write("\n")
                proc.stdin.flush()
            assert await asyncio.to_thread(proc.wait, 30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert r.follower.stats().sync_timeouts == 0
    await r.aclose()
