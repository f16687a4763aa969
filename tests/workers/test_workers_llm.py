"""The LLM path through a worker process: a real local chat-completions server; valid JSON
lands in the target with the model in provenance, always-invalid JSON ends in the DLQ."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from workers_support import WorkerProcs

from blackboard import Blackboard, DeadLetter, Entry, WriteRequest
from blackboard.keys import PartitionKeys
from memory.registry import Registry
from memory.subscriptions import MemorySubscription, Trigger
from tests.consolidation.cons_support import ChatServer, Reply

MODEL = "test-model"


async def until(pred: Callable[[], Awaitable[Any]], limit_s: float, what: str) -> Any:
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        got = await pred()
        if got:
            return got
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out after {limit_s}s waiting for {what}")


async def _setup(bb: Blackboard) -> list[Entry]:
    reg = Registry(bb)
    await reg.save_edge(
        MemorySubscription(
            "agent:*:working", "agent:{1}:stm", "summarize", trigger=Trigger.count(5),
            params={"max_batch": 5},
        )
    )
    await reg.aclose()
    return await bb.scope("agent:a1:working").write_many(
        [WriteRequest(f"step {i}: the migration {'failed' if i < 2 else 'ran'}") for i in range(5)]
    )


def _start(procs: WorkerProcs, chat_server: ChatServer) -> Any:
    return procs.start(
        "summarize",
        BLACKBOARD_WORKER_LLM_BASE_URL=chat_server.base_url,
        BLACKBOARD_WORKER_LLM_MODEL=MODEL,
        BLACKBOARD_WORKER_MAX_FAILURES="2",
    )


async def test_valid_json_carries_the_model(
    bb: Blackboard, worker_procs: WorkerProcs, chat_server: ChatServer
) -> None:
    chat_server.script = [Reply(content=json.dumps({"summary": "The migration failed, then ran."}))]
    w = _start(worker_procs, chat_server)
    src = await _setup(bb)

    async def derived() -> list[Entry]:
        return await bb.scope("agent:a1:stm").entries(limit=None)

    [d] = await until(derived, 20, "the LLM summary")
    prov = d.metadata["provenance"]
    assert prov["model"] == MODEL and prov["transformer"] == "summarize"
    assert sorted(prov["sources"]) == sorted(e.id for e in src)
    assert d.value["text"] == "The migration failed, then ran."
    assert d.metadata["method"] == "llm"
    assert chat_server.requests and chat_server.requests[0]["model"] == MODEL
    assert "step 0" in chat_server.requests[0]["messages"][1]["content"]
    assert worker_procs.terminate(w) == 0


async def test_always_invalid_json_goes_to_the_dlq(
    bb: Blackboard, worker_procs: WorkerProcs, chat_server: ChatServer
) -> None:
    chat_server.script = [Reply(content="this is not JSON")]
    w = _start(worker_procs, chat_server)
    src = await _setup(bb)
    part = PartitionKeys(bb.scope("agent:a1:working").partition)

    async def dead() -> list[DeadLetter]:
        return await bb.dead_letters.list(partition=bb.scope("agent:a1:working").partition)

    [letter] = await until(dead, 25, "the batch in the DLQ")
    fields = letter.fields
    assert fields["kind"] == "dataflow" and fields["target"] == "agent:a1:stm"
    assert fields["edge"].startswith("summarize-")
    assert "InvalidLLMOutput" in fields["reason"] and "not JSON" in fields["reason"]
    listed = [line.split("|", 2)[2] for line in fields["items"].split("\n")]
    assert sorted(listed) == sorted(e.id for e in src)  # every item, none dropped
    assert await bb.scope("agent:a1:stm").count() == 0
    assert await bb.client.scard(part.pendings) == 0  # taken off the buffer, into the DLQ
    # One attempt: its call and one repair round, then the DLQ (not retried: see dataflow)
    assert len(chat_server.requests) == 2
    assert worker_procs.terminate(w) == 0


async def test_invalid_json_is_repaired_once_and_lands(
    bb: Blackboard, worker_procs: WorkerProcs, chat_server: ChatServer
) -> None:
    good = json.dumps({"summary": "The migration failed, then ran."})
    chat_server.script = [Reply(content="{summary: oops"), Reply(content=good)]
    w = _start(worker_procs, chat_server)
    await _setup(bb)

    async def derived() -> list[Entry]:
        return await bb.scope("agent:a1:stm").entries(limit=None)

    [d] = await until(derived, 20, "the repaired LLM summary")
    assert d.metadata["method"] == "llm" and d.value["text"] == "The migration failed, then ran."
    assert len(chat_server.requests) == 2  # the call and its one repair round
    repair = chat_server.requests[1]["messages"]
    assert repair[-2] == {"role": "assistant", "content": "{summary: oops"}
    assert "not JSON" in repair[-1]["content"]
    assert worker_procs.terminate(w) == 0


async def test_invalid_twice_goes_to_the_dlq_after_one_repair(
    bb: Blackboard, worker_procs: WorkerProcs, chat_server: ChatServer
) -> None:
    chat_server.script = [Reply(content="nope"), Reply(content='{"summary": 7}')]
    w = worker_procs.start(
        "summarize",
        BLACKBOARD_LLM_URL=chat_server.base_url,
        BLACKBOARD_LLM_MODEL=MODEL,
        BLACKBOARD_WORKER_MAX_FAILURES="3",  # not used up: invalid output is not retried
    )
    src = await _setup(bb)

    async def dead() -> list[DeadLetter]:
        return await bb.dead_letters.list(partition=bb.scope("agent:a1:working").partition)

    [letter] = await until(dead, 25, "the batch in the DLQ")
    assert "InvalidLLMOutput" in letter.fields["reason"]
    assert "after repair: does not match schema SummaryOut" in letter.fields["reason"]
    listed = [line.split("|", 2)[2] for line in letter.fields["items"].split("\n")]
    assert sorted(listed) == sorted(e.id for e in src)
    assert len(chat_server.requests) == 2
    assert await bb.scope("agent:a1:stm").count() == 0
    assert worker_procs.terminate(w) == 0
