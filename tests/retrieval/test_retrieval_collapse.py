"""Recall shows each fact once (retrieval.collapse): a copy made by a dataflow edge, or a
summary holding the sentence, never doubles a hit; ``collapse=False`` gives every form."""

from __future__ import annotations

from blackboard import Blackboard, EntryRef
from memory import AgentMemory, MemoryLevel, MemoryQuery
from retrieval.collapse import collapse
from retrieval.embedders import HashingEmbedder
from retrieval.recall import Retriever
from retrieval.text import origin_of


async def test_copy_and_origin_count_once(bb: Blackboard) -> None:
    async with AgentMemory(bb, "a1", retriever=Retriever(bb, embedder=HashingEmbedder())) as mem:
        orig = await mem.store({"text": "the ledger post failed on a locked period"})
        copy = await mem.store(
            {"text": "the ledger post failed on a locked period"}, MemoryLevel.STM,
            metadata={"origin_id": orig.id, "occurred_at": orig.created_at},
        )
        other = await mem.store({"text": "the ledger was reconciled"}, MemoryLevel.STM)
        hits = await mem.recall("ledger post failed")
        every = await mem.recall(MemoryQuery(query="ledger post failed", collapse=False))
    assert [origin_of(h.entry) for h in hits].count(orig.id) == 1
    assert hits[0].entry.id == orig.id  # the original shows, the copy is listed
    assert hits[0].also_in == (EntryRef(copy.scope, copy.id),)
    assert other.id in {h.entry.id for h in hits}
    assert collapse(hits) == hits
    assert {h.entry.id for h in every} == {orig.id, copy.id, other.id}
    assert all(not h.also_in for h in every)


async def test_more_candidates_are_ranked_so_k_facts_remain(bb: Blackboard) -> None:
    async with AgentMemory(bb, "a1", retriever=Retriever(bb, embedder=HashingEmbedder())) as mem:
        for i in range(4):
            w = await mem.store(f"invoice {i} was paid late")
            await mem.store(f"invoice {i} was paid late", MemoryLevel.STM,
                            metadata={"origin_id": w.id}, source=[w.id])
            await mem.store({"text": f"Invoice {i} was paid late."}, MemoryLevel.STM,
                            metadata={"provenance": {"sources": [w.id]}}, source=[w.id])
        hits = await mem.recall("invoice paid late", max_results=4)
    assert sorted(h.entry.text for h in hits) == [f"invoice {i} was paid late" for i in range(4)]
    assert all(len(h.also_in) == 2 for h in hits)
