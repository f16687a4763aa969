"""OpenAIClient against a real local chat-completions server, and LLM transformer paths."""

from __future__ import annotations

import json
import time

import pytest
from pydantic import BaseModel

from consolidation import TransformContext, get_transformer
from consolidation.llm import BudgetExceeded, InvalidLLMOutput, LLMUnavailable, OpenAIClient
from tests.consolidation.cons_support import T0, ChatServer, Reply, make_entry


class Answer(BaseModel):
    city: str
    count: int


GOOD = json.dumps({"city": "Paris", "count": 2})


def client(s: ChatServer, **kw: object) -> OpenAIClient:
    kw.setdefault("backoff", 0.01)
    kw.setdefault("timeout", 2.0)
    return OpenAIClient(s.base_url, "test-model", **kw)  # type: ignore[arg-type]


async def test_valid_json(chat_server: ChatServer) -> None:
    chat_server.script = [Reply(content=GOOD)]
    async with client(chat_server) as c:
        assert await c.complete_json("sys", "user", Answer) == Answer(city="Paris", count=2)
    body = chat_server.requests[0]
    assert body["model"] == "test-model"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["title"] == "Answer"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


async def test_invalid_json_is_repaired(chat_server: ChatServer) -> None:
    chat_server.script = [
        Reply(content="{city: Paris"),
        Reply(content="```json\n" + GOOD + "\n```"),
    ]
    async with client(chat_server) as c:
        assert (await c.complete_json("s", "u", Answer)).city == "Paris"
    assert len(chat_server.requests) == 2
    repair = chat_server.requests[1]["messages"]
    assert repair[2] == {"role": "assistant", "content": "{city: Paris"}
    assert "not JSON" in repair[3]["content"]


async def test_schema_error_is_sent_back(chat_server: ChatServer) -> None:
    chat_server.script = [Reply(content='{"city": "Paris"}'), Reply(content=GOOD)]
    async with client(chat_server) as c:
        assert (await c.complete_json("s", "u", Answer)).count == 2
    assert "count" in chat_server.requests[1]["messages"][3]["content"]


async def test_always_invalid_raises_with_reason(chat_server: ChatServer) -> None:
    chat_server.script = [Reply(content="nope")]
    async with client(chat_server) as c:
        with pytest.raises(InvalidLLMOutput, match="after repair: not JSON") as ei:
            await c.complete_json("s", "u", Answer)
    assert "not JSON" in ei.value.reason
    assert len(chat_server.requests) == 2


async def test_429_then_success(chat_server: ChatServer) -> None:
    chat_server.script = [
        Reply(status=429, content="slow down", headers={"Retry-After": "0"}),
        Reply(status=503),
        Reply(content=GOOD),
    ]
    async with client(chat_server) as c:
        assert (await c.complete_json("s", "u", Answer)).city == "Paris"
    assert len(chat_server.requests) == 3


async def test_persistent_5xx_gives_up(chat_server: ChatServer) -> None:
    chat_server.script = [Reply(status=500, content="boom")]
    async with client(chat_server, max_retries=2) as c:
        with pytest.raises(LLMUnavailable, match="3 attempts: HTTP 500"):
            await c.complete_json("s", "u", Answer)
    assert len(chat_server.requests) == 3


async def test_client_error_is_not_retried(chat_server: ChatServer) -> None:
    chat_server.script = [Reply(status=400, content="bad request")]
    async with client(chat_server) as c:
        with pytest.raises(LLMUnavailable, match="HTTP 400"):
            await c.complete_json("s", "u", Answer)
    assert len(chat_server.requests) == 1


async def test_timeout_is_retried(chat_server: ChatServer) -> None:
    chat_server.script = [Reply(content=GOOD, delay=0.6), Reply(content=GOOD)]
    async with client(chat_server, timeout=0.2) as c:
        assert (await c.complete_json("s", "u", Answer)).city == "Paris"
    assert len(chat_server.requests) == 2


async def test_token_budget(chat_server: ChatServer) -> None:
    chat_server.script = [Reply(content=GOOD, usage=(150, 100))]
    async with client(chat_server, token_budget=400) as c:
        await c.complete_json("s", "u", Answer)
        assert c.budget.used == 250
        with pytest.raises(BudgetExceeded, match="500 of 400"):
            await c.complete_json("s", "u", Answer)
        with pytest.raises(BudgetExceeded):
            await c.complete_json("s", "u", Answer)
    assert len(chat_server.requests) == 2  # the spent budget refuses before sending


async def test_rate_limit_spaces_requests(chat_server: ChatServer) -> None:
    chat_server.script = [Reply(content=GOOD)]
    async with client(chat_server, rate=20.0) as c:
        # A first request opens the connection: its set-up delays that arrival (by ~40 ms
        # in a fresh checkout, where modules compile on first use) and would shorten the
        # span the server sees. The measured requests come after it.
        await c.complete_json("s", "u", Answer)
        start = time.monotonic()
        for _ in range(6):
            await c.complete_json("s", "u", Answer)
        elapsed = time.monotonic() - start
    # Six starts at 20 requests/s are at least 5 * 50 ms apart on the client's clock.
    # Arrival times at the server add scheduling jitter (tens of ms on a loaded 2-CPU
    # machine), so the server-side bound keeps the same 80% of the spacing over more
    # intervals: an unlimited client would show a span of a few ms.
    assert elapsed >= 0.249
    measured = chat_server.times[-6:]
    assert measured[-1] - measured[0] >= 0.2


async def test_semantic_llm_path_end_to_end(chat_server: ChatServer) -> None:
    facts = {
        "facts": [
            {
                "entry": 0,
                "subject": "Alice",
                "predicate": "lives in",
                "object": "Paris",
                "negated": False,
            }
        ]
    }
    chat_server.script = [Reply(content=json.dumps(facts))]
    es = [make_entry("l1", "Alice just moved to Paris, she says.", at=0)]
    async with client(chat_server) as c:
        ctx = TransformContext("e", "agent:a1:ltm:semantic", llm=c, now_ms=T0)
        [d] = await get_transformer("semantic")(es, ctx)
    assert d.key == "fact:world_fact:entity:alice:lives_in" and d.provenance.model == "test-model"
    assert "[0]" in chat_server.requests[0]["messages"][1]["content"]


async def test_llm_fact_citing_missing_entry_is_invalid(chat_server: ChatServer) -> None:
    bad = {"facts": [{"entry": 7, "subject": "A", "predicate": "is", "object": "B"}]}
    chat_server.script = [Reply(content=json.dumps(bad))]
    async with client(chat_server) as c:
        ctx = TransformContext("e", "s", llm=c, now_ms=T0)
        with pytest.raises(InvalidLLMOutput, match=r"facts\.0\.entry: .* less than or equal to 0"):
            await get_transformer("semantic")([make_entry("l1", "x")], ctx)
    # The schema sent names the batch's entries, so a constrained model cannot cite another;
    # the reply that does anyway is repaired once, then refused.
    sent = chat_server.requests[0]["response_format"]["json_schema"]["schema"]
    entry = sent["$defs"]["FactOut"]["properties"]["entry"]
    assert (entry["minimum"], entry["maximum"]) == (0, 0)
    assert len(chat_server.requests) == 2


async def test_reply_cut_at_max_tokens_is_repaired_then_refused(chat_server: ChatServer) -> None:
    chat_server.script = [Reply(content='{"city": "Par', finish_reason="length")]
    async with client(chat_server, max_tokens=5) as c:
        with pytest.raises(InvalidLLMOutput, match="cut off at max_tokens"):
            await c.complete_json("s", "u", Answer)
    assert [r["max_tokens"] for r in chat_server.requests] == [5, 5]
    assert "cut off at max_tokens" in chat_server.requests[1]["messages"][3]["content"]


async def test_summarize_and_episodic_llm_paths(chat_server: ChatServer) -> None:
    chat_server.script = [
        Reply(content=json.dumps({"summary": "Migration failed, then succeeded."})),
        Reply(
            content=json.dumps(
                {"title": "Migration", "steps": ["fail", "retry"], "outcome": "success"}
            )
        ),
    ]
    es = [make_entry("w1", "migration failed", at=0), make_entry("w2", "retried ok", at=1)]
    async with client(chat_server) as c:
        ctx = TransformContext("e", "s", llm=c, now_ms=T0)
        [s] = await get_transformer("summarize")(es, ctx)
        [ep] = await get_transformer("episodic")(es, ctx)
    assert s.value["text"] == "Migration failed, then succeeded."
    assert s.metadata["method"] == "llm" and s.provenance.model == "test-model"
    assert ep.value["steps"] == ["fail", "retry"] and ep.value["outcome"] == "success"
    assert ep.value["title"] == "Migration"
