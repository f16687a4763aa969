"""The OpenAI Agents SDK session (issue 29, item 3): ``BlackboardSession`` against the
SDK's own ``SQLiteSession`` operation by operation, under concurrency, on bad input, with
the SDK missing, and in a real ``Runner.run`` of an ``Agent`` over two turns against a
local fake of the Responses API (loopback only)."""

from __future__ import annotations

import asyncio
import importlib
import json
import random
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool
from agents.memory import Session, SessionSettings
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI

from blackboard import Blackboard, InvalidArgument
from integrations.openai_agents import ITEM_FIELD, BlackboardSession
from memory import AgentMemory, MemoryLevel, MemorySubscription
from memory.conversation import message_of, session_tag
from retrieval import Retriever
from tests.integrations.fake_responses import call, fake_responses, say

pytestmark = pytest.mark.integration

EPISODIC = "agent:a1:ltm:episodic"

#: Items of every kind the SDK stores: easy and full messages, a tool call and its output,
#: reasoning, a structured output part, Unicode and numbers that must come back unchanged.
ITEMS: list[Any] = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "look"}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "weather",
     "arguments": "{\"city\": \"Paris\"}", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1",
     "output": json.dumps({"temp_c": 21.5, "sky": "clear"})},
    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "21.5 °C and clear — enjoy", "annotations":
                  [{"type": "url_citation", "start_index": 0, "end_index": 4, "url": "u",
                    "title": "t"}]}]},
    {"role": "user", "content": [{"type": "input_text", "text": "and tomorrow? 🌧"},
                                 {"type": "input_image", "image_url": "data:,x",
                                  "detail": "auto"}]},
    {"role": "system", "content": "be brief", "extra": {"n": [1, 2.0, None, True], "e": {}}},
]


@pytest.fixture()
async def mem(bb: Blackboard) -> AsyncIterator[AgentMemory]:
    retr = Retriever(bb, embedder=None)
    async with AgentMemory(bb, "a1", retriever=retr) as m:
        yield m
    await retr.aclose()


def _pair(mem: AgentMemory, sid: str = "s1") -> tuple[BlackboardSession, SQLiteSession]:
    return BlackboardSession(sid, mem), SQLiteSession(sid)


async def _both(ours: Session, ref: Session, op: str, *args: Any) -> Any:
    got, want = await getattr(ours, op)(*args), await getattr(ref, op)(*args)
    assert got == want, (op, args)
    return got


# -- the protocol, against SQLiteSession ----------------------------------------------------

async def test_is_an_agents_session(mem: AgentMemory) -> None:
    s = BlackboardSession("s1", mem)
    assert isinstance(s, Session)
    assert s.session_id == "s1" and s.session_settings == SessionSettings()
    assert s.scope_id == EPISODIC


async def test_every_operation_matches_sqlite_session(mem: AgentMemory) -> None:
    ours, ref = _pair(mem)
    assert await _both(ours, ref, "get_items") == []
    assert await _both(ours, ref, "pop_item") is None
    await _both(ours, ref, "add_items", ITEMS[:4])
    await _both(ours, ref, "add_items", [])
    await _both(ours, ref, "add_items", ITEMS[4:])
    assert await _both(ours, ref, "get_items") == ITEMS  # exact round trip, in order
    for n in range(len(ITEMS) + 2):
        await _both(ours, ref, "get_items", n)
    assert await _both(ours, ref, "pop_item") == ITEMS[-1]
    assert await _both(ours, ref, "pop_item") == ITEMS[-2]
    await _both(ours, ref, "add_items", [ITEMS[0]])  # the same item twice is two items
    assert await _both(ours, ref, "get_items", 2) == [ITEMS[4], ITEMS[0]]
    await _both(ours, ref, "clear_session")
    assert await _both(ours, ref, "get_items") == []
    assert await _both(ours, ref, "pop_item") is None
    await _both(ours, ref, "add_items", ITEMS[2:4])
    while await _both(ours, ref, "pop_item") is not None:
        pass
    assert await _both(ours, ref, "get_items") == []
    await _both(ours, ref, "clear_session")  # clearing an empty session is harmless


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_random_operation_sequences_match_sqlite_session(mem: AgentMemory, seed: int) -> None:
    rnd = random.Random(seed)
    ours, ref = _pair(mem, f"r{seed}")
    for _ in range(40):
        op = rnd.choices(["add", "get", "pop", "clear"], weights=[5, 4, 3, 1])[0]
        if op == "add":
            await _both(ours, ref, "add_items", rnd.choices(ITEMS, k=rnd.randint(0, 4)))
        elif op == "get":
            await _both(ours, ref, "get_items", rnd.choice([None, 0, 1, 2, 5, 50]))
        elif op == "pop":
            await _both(ours, ref, "pop_item")
        else:
            await _both(ours, ref, "clear_session")
    await _both(ours, ref, "get_items")


async def test_session_settings_limit_is_the_default(mem: AgentMemory) -> None:
    ours = BlackboardSession("s1", mem, session_settings={"limit": 2})
    ref = SQLiteSession("s1", session_settings=SessionSettings(limit=2))
    await _both(ours, ref, "add_items", ITEMS)
    assert await _both(ours, ref, "get_items") == ITEMS[-2:]
    assert await _both(ours, ref, "get_items", 5) == ITEMS[-5:]


async def test_sessions_are_apart_and_items_are_conversation_messages(
    mem: AgentMemory, bb: Blackboard
) -> None:
    a, b = BlackboardSession("a", mem), BlackboardSession("b", mem, level=MemoryLevel.WORKING)
    await a.add_items(ITEMS[:3])
    await b.add_items(ITEMS[3:])
    assert await a.get_items() == ITEMS[:3] and await b.get_items() == ITEMS[3:]
    assert b.scope_id == "agent:a1:working"
    entries = await bb.scope(EPISODIC).entries(all_of={session_tag("a")}, newest_first=False)
    msgs = [message_of(e) for e in entries]
    assert [m.speaker for m in msgs if m] == ["user", "reasoning", "function_call"]
    assert [m.text for m in msgs if m] == ["What is the weather in Paris?", "look",
                                          "weather({\"city\": \"Paris\"})"]
    assert [e.value["position"] for e in entries] == [0, 1, 2]
    assert json.loads(entries[0].metadata[ITEM_FIELD]) == ITEMS[0]
    # a message the session did not write (add_messages by hand) is not one of its items
    from memory import Message
    await mem.add_messages("a", [Message("Ana", "hello")])
    assert await a.get_items() == ITEMS[:3]
    assert await a.get_items(1) == ITEMS[2:3]
    assert await a.pop_item() == ITEMS[2]
    await a.clear_session()
    left = await bb.scope(EPISODIC).entries(all_of={session_tag("a")})
    assert [message_of(e).text for e in left] == ["hello"]  # type: ignore[union-attr]


async def test_recall_finds_the_conversation(mem: AgentMemory) -> None:
    s = BlackboardSession("s1", mem)
    await s.add_items(ITEMS)
    hits = await mem.recall("weather Paris")
    assert hits and any(h.entry.metadata.get(ITEM_FIELD) for h in hits[:3])
    hits = await mem.recall("tomorrow")  # its neighbours' context mentions it too
    assert ITEMS[5] in [json.loads(h.entry.metadata[ITEM_FIELD]) for h in hits[:2]]


async def test_maintenance_dedupe_keeps_a_turn_said_twice(mem: AgentMemory, bb: Blackboard) -> None:
    from workers.maintenance import Maintenance

    s = BlackboardSession("s1", mem)
    items = [{"role": "user", "content": "yes"}, {"role": "assistant", "content": "Sure?"},
             {"role": "user", "content": "yes"}]
    await s.add_items(items)
    rep = await Maintenance(bb, "t").dedupe(bb.scope(EPISODIC).partition)
    assert rep.counts == {}
    assert await s.get_items() == items


async def test_clear_forgets_the_items_and_keeps_what_consolidation_derived(
    mem: AgentMemory, bb: Blackboard
) -> None:
    from workers.transform import TransformBridge

    s = BlackboardSession("s1", mem, level=MemoryLevel.WORKING)
    await s.add_items(ITEMS)
    work = await bb.scope("agent:a1:working").entries(limit=None, newest_first=False)
    edge = MemorySubscription("agent:*:working", "agent:{1}:stm", "summarize")
    await bb.scope("agent:a1:stm").write_many(
        await TransformBridge(bb)(edge, "agent:a1:stm", work, bb.now_ms()))
    (summary,) = await bb.scope("agent:a1:stm").entries(all_of={"summary"})
    assert "Paris" in summary.text
    assert set(summary.metadata["provenance"]["sources"]) <= {e.id for e in work}
    await s.clear_session()
    assert await s.get_items() == [] and await bb.scope("agent:a1:working").count() == 0
    assert (await bb.scope("agent:a1:stm").get(summary.id)).text == summary.text  # kept


# -- concurrency ----------------------------------------------------------------------------

async def test_concurrent_pops_take_each_item_once(mem: AgentMemory) -> None:
    s = BlackboardSession("s1", mem)
    items = [{"role": "user", "content": f"m{i}"} for i in range(20)]
    await s.add_items(items)
    others = [BlackboardSession("s1", mem) for _ in range(30)]
    got = await asyncio.gather(*(o.pop_item() for o in others))
    popped = [g for g in got if g is not None]
    assert len(popped) == 20 and sorted(p["content"] for p in popped) == sorted(
        i["content"] for i in items)
    assert await s.get_items() == []


async def test_clear_is_one_transaction_and_never_splits_a_batch(
    mem: AgentMemory, bb: Blackboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = BlackboardSession("s1", mem)
    await s.add_items([{"role": "user", "content": f"old {i}"} for i in range(30)])
    seen: list[object] = []
    real = bb.client.pipeline

    def spy(*a: object, **kw: object):  # type: ignore[no-untyped-def]
        seen.append(kw.get("transaction"))
        return real(*a, **kw)

    monkeypatch.setattr(bb.client, "pipeline", spy)
    await s.clear_session()
    assert seen.count(True) == 1  # the 30 deletes: one MULTI/EXEC
    monkeypatch.undo()

    async def add(k: int) -> None:
        await s.add_items([{"role": "user", "content": f"b{k} {i}"} for i in range(5)])

    for _ in range(3):
        await asyncio.gather(*(add(k) for k in range(6)), s.clear_session(),
                             s.clear_session())
        left = [i["content"] for i in await s.get_items()]
        batches = {c.split()[0] for c in left}
        for b in batches:  # every batch whole or gone
            assert [c for c in left if c.split()[0] == b] == [f"{b} {i}" for i in range(5)]
        await s.clear_session()
    assert await s.get_items() == []


async def test_pop_racing_clear_and_add_loses_nothing_twice(mem: AgentMemory) -> None:
    s = BlackboardSession("s1", mem)
    await s.add_items([{"role": "user", "content": str(i)} for i in range(10)])
    pops = [BlackboardSession("s1", mem).pop_item() for _ in range(6)]
    got = await asyncio.gather(*pops, s.clear_session(),
                               s.add_items([{"role": "user", "content": "new"}]))
    popped = [g["content"] for g in got[:6] if g is not None]
    assert len(popped) == len(set(popped))
    left = [i["content"] for i in await s.get_items()]
    assert not set(left) & set(popped)
    assert set(left) <= {"new"}


# -- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize("sid", ["", " ", "a b", "x{1}", "tab\there", "*", None, 7])
async def test_invalid_session_ids_are_refused(mem: AgentMemory, sid: Any) -> None:
    with pytest.raises(InvalidArgument, match="session"):
        BlackboardSession(sid, mem)


async def test_bad_limits_and_settings_are_refused(mem: AgentMemory) -> None:
    s = BlackboardSession("s1", mem)
    for bad in (-1, True, 1.5, "2"):
        with pytest.raises(InvalidArgument, match="limit"):
            await s.get_items(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="limit"):
        BlackboardSession("s1", mem, session_settings=SessionSettings(limit=-3))
    with pytest.raises(InvalidArgument, match="AgentMemory"):
        BlackboardSession("s1", object())  # type: ignore[arg-type]


BAD_ITEMS: list[tuple[Any, str]] = [
    ("hello", "not a dict"),
    ({"content": "no role"}, "neither a 'role' nor a 'type'"),
    ({"role": "", "content": "x"}, "neither"),
    ({"role": "user", "content": float("nan")}, "not JSON"),
    ({"role": "user", "content": {1, 2}}, "not JSON"),
    ({"role": "user", "content": "x", "meta": {1: "int key"}}, "unchanged"),
    ({"role": "user", "content": ("a", "tuple")}, "unchanged"),
    ({"role": "user", "content": "\ud800"}, "not JSON"),
]


@pytest.mark.parametrize(("item", "says"), BAD_ITEMS)
async def test_a_malformed_item_writes_nothing(
    mem: AgentMemory, bb: Blackboard, item: Any, says: str
) -> None:
    s = BlackboardSession("s1", mem)
    await s.add_items(ITEMS[:2])
    before = await bb.scope(EPISODIC).count()
    with pytest.raises(InvalidArgument, match=re.escape(says)) as err:
        await s.add_items([ITEMS[0], item, ITEMS[1]])
    assert "item 1" in str(err.value)
    assert await bb.scope(EPISODIC).count() == before
    assert await s.get_items() == ITEMS[:2]


async def test_not_a_list_and_too_large_write_nothing(mem: AgentMemory, bb: Blackboard) -> None:
    s = BlackboardSession("s1", mem)
    for bad in ({"role": "user", "content": "x"}, "text", None):
        with pytest.raises(InvalidArgument, match="list of items"):
            await s.add_items(bad)  # type: ignore[arg-type]
    long = {"type": "function_call_output", "call_id": "c", "output": "y " * 100_000}
    await s.add_items([long])  # 200 kB of output: kept whole, indexed by its first 10,000
    (e,) = await bb.scope(EPISODIC).entries()
    assert len(e.value["text"]) == 10_000 and await s.get_items() == [long]
    await s.clear_session()
    huge = {"role": "user", "content": "x" * (2 << 20)}
    with pytest.raises(InvalidArgument):  # EntryTooLarge, before anything is sent
        await s.add_items([ITEMS[0], huge])
    assert await bb.scope(EPISODIC).count() == 0


# -- the SDK missing ------------------------------------------------------------------------

def test_without_the_sdk_the_import_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "agents" or m.startswith("agents.")]:
        monkeypatch.setitem(sys.modules, name, None)  # type: ignore[arg-type]
    monkeypatch.setitem(sys.modules, "agents", None)  # type: ignore[arg-type]
    monkeypatch.delitem(sys.modules, "integrations.openai_agents")
    with pytest.raises(ImportError) as err:
        importlib.import_module("integrations.openai_agents")
    msg = str(err.value)
    assert "\n" not in msg and "pip install 'reactive-blackboard[openai-agents]'" in msg


# -- a real Runner.run against a local fake of the Responses API ----------------------------

@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: 21.5 C, clear"


def _texts(body: dict[str, Any]) -> list[str]:
    """What a request to the model carried, as comparable lines."""
    out = []
    for it in body["input"]:
        c = it.get("content")
        if isinstance(c, list):
            c = " ".join(p.get("text", "") for p in c)
        out.append(f"{it.get('role') or it.get('type')}: {c or it.get('output') or it.get('name')}")
    return out


async def _two_turns(session: Session) -> tuple[list[dict[str, Any]], list[str]]:
    replies = [
        lambda body: [call("weather", {"city": "Paris"}, 1)],
        lambda body: [say("Paris is 21.5 C and clear.", 2)],
        lambda body: [say(f"You asked {sum(1 for i in body['input'] if i.get('role') == 'user')}"
                          " questions so far.", 3)],
    ]
    with fake_responses(replies) as fake:
        client = AsyncOpenAI(base_url=fake.url, api_key="not-a-key", max_retries=0)
        client._platform = "Linux"  # else its first request runs `uname -p` (a process)
        agent = Agent(name="helper", instructions="Answer briefly.", tools=[weather],
                      model=OpenAIResponsesModel(model="fake-model", openai_client=client))
        cfg = RunConfig(tracing_disabled=True)
        r1 = await Runner.run(agent, "Weather in Paris?", session=session, run_config=cfg)
        r2 = await Runner.run(agent, "How many questions?", session=session, run_config=cfg)
        await client.close()
    return fake.requests, [str(r1.final_output), str(r2.final_output)]


async def test_runner_two_turns_carry_history_through_our_session(
    mem: AgentMemory, bb: Blackboard
) -> None:
    ours = BlackboardSession("chat-1", mem)
    requests, outputs = await _two_turns(ours)
    assert outputs == ["Paris is 21.5 C and clear.", "You asked 2 questions so far."]
    assert len(requests) == 3
    # turn 2's request holds turn 1 (question, tool call, its output, answer) from our session
    assert _texts(requests[2]) == [
        "user: Weather in Paris?", "function_call: weather",
        "function_call_output: Paris: 21.5 C, clear", "assistant: Paris is 21.5 C and clear.",
        "user: How many questions?",
    ]
    history = await ours.get_items()
    assert [i.get("type") or "message" for i in history] == [
        "message", "function_call", "function_call_output", "message", "message", "message"]
    # the same two turns on the SDK's own session: the same history, the same requests
    ref = SQLiteSession("chat-1")
    ref_requests, ref_outputs = await _two_turns(ref)
    assert ref_outputs == outputs
    assert await ref.get_items() == history
    assert [r["input"] for r in ref_requests] == [r["input"] for r in requests]
    # and memory holds the conversation: recall finds the tool's answer
    hits = await mem.recall("Paris clear weather")
    assert any(h.entry.metadata.get(ITEM_FIELD) for h in hits)
    assert await bb.scope(EPISODIC).count() == 6


# -- the README's snippet -------------------------------------------------------------------

def _readme_snippet() -> str:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### OpenAI Agents SDK", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    return code.group(1)


async def test_readme_snippet_runs(redis_url: str, bb: Blackboard,
                                   monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    src = _readme_snippet().replace("redis://localhost:6379/0", redis_url)
    src = src.replace("asyncio.run(main())", "")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scope: dict[str, Any] = {}
    exec(compile(src, "README OpenAI Agents SDK", "exec"), scope)
    await scope["main"]()
    assert "user: Where do we meet?" in capsys.readouterr().out
