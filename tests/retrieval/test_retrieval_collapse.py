"""Recall keeps one hit per origin: a copy made by a dataflow edge never doubles a hit."""

from __future__ import annotations

from blackboard import Blackboard
from memory import AgentMemory, MemoryLevel
from retrieval.embedders import HashingEmbedder
from retrieval.recall import Retriever, collapse_copies
from retrieval.text import origin_of


async def test_copy_and_origin_count_once(bb: Blackboard) -> None:
    async with AgentMemory(bb, "a1", retriever=Retriever(bb, embedder=HashingEmbedder())) as mem:
        orig = await mem.store({"text": "the ledger post failed on a locked period"})
        await mem.store(
            {"text": "the ledger post failed on a locked period"}, MemoryLevel.STM,
            metadata={"origin_id": orig.id, "occurred_at": orig.created_at},
        )
        other = await mem.store({"text": "the ledger was reconciled"}, MemoryLevel.STM)
        hits = await mem.recall("ledger post failed")
    assert [origin_of(h.entry) for h in hits].count(orig.id) == 1
    assert other.id in {h.entry.id for h in hits}
    assert collapse_copies(hits) == hits
