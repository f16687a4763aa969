"""The LLM path through a worker process against a real model (``local_llm``:
SmolLM2-135M-Instruct served by llama.cpp, tests/support_llm.py), configured as a user
would: ``BLACKBOARD_LLM_URL`` / ``_MODEL``, on for the summarize role only."""

from __future__ import annotations

from workers_support import WorkerProcs

from blackboard import Blackboard, Entry, WriteRequest
from memory.registry import Registry
from memory.subscriptions import MemorySubscription, Trigger
from tests.support_llm import LocalLLM
from tests.workers.test_workers_llm import until


async def test_real_model_summary_lands_with_the_model(
    bb: Blackboard, worker_procs: WorkerProcs, local_llm: LocalLLM
) -> None:
    w = worker_procs.start(
        "summarize",
        BLACKBOARD_LLM_URL=local_llm.base_url,
        BLACKBOARD_LLM_MODEL=local_llm.model,
        BLACKBOARD_LLM_ROLES="summarize",
        BLACKBOARD_LLM_MAX_TOKENS="256",
    )
    reg = Registry(bb)
    await reg.save_edge(
        MemorySubscription(
            "agent:*:working", "agent:{1}:stm", "summarize", trigger=Trigger.count(3),
            params={"max_batch": 3, "budget": 24},
        )
    )
    await reg.aclose()
    src = await bb.scope("agent:a1:working").write_many(
        [WriteRequest("The migration failed."), WriteRequest("Retried the migration."),
         WriteRequest("The migration succeeded.")]
    )

    async def derived() -> list[Entry]:
        return await bb.scope("agent:a1:stm").entries(limit=None)

    [d] = await until(derived, 120, "the real model's summary")
    prov = d.metadata["provenance"]
    assert d.metadata["method"] == "llm" and d.value["text"]
    assert prov["model"] == local_llm.model and prov["transformer"] == "summarize"
    assert sorted(prov["sources"]) == sorted(e.id for e in src)
    assert worker_procs.terminate(w) == 0
