"""The store in graphs: the example (examples/langgraph_memory.py) runs -- what one thread
was told, a new thread of the same user recalls, another user's thread does not see --, so
does the README's snippet, and an async graph uses the store on its own loop."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import redis
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from blackboard import Blackboard
from integrations.langgraph import BlackboardStore
from memory import AgentMemory

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "langgraph_memory.py"


def test_example_graph_remembers_across_threads(
        clean_redis: redis.Redis, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("langgraph_memory_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    # registered, as `python examples/...` would be: LangGraph resolves the state's hints
    monkeypatch.setitem(sys.modules, spec.name, example)
    spec.loader.exec_module(example)
    replies = example.main(redis_url)
    assert replies == [
        "noted: I drink green tea, no sugar",
        "noted: my invoices go to billing@acme.test",
        "you told me: I drink green tea, no sugar",
        "I know nothing about that yet.",
    ]


def test_readme_snippet_runs(clean_redis: redis.Redis, redis_url: str,
                             capsys: pytest.CaptureFixture[str]) -> None:
    readme = (EXAMPLE.parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### LangGraph store", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code.replace("redis://localhost:6379/0", redis_url), "README", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "{'text': 'likes short answers', 'lang': 'en'}"
    assert out[1] == "['prefs']"
    assert out[2].startswith("[('prefs', ") and out[3] == "[('team', 't1'), ('users', 'u1')]"


async def test_async_graph_uses_the_store_on_its_loop(bb: Blackboard) -> None:
    """ainvoke: an async node awaits the a-methods, a sync node (run in a thread by
    LangGraph) calls the blocking ones; both reach the memory on the test's loop."""

    class S(TypedDict):
        n: int

    async def write(state: S, runtime: Runtime[None]) -> S:
        assert runtime.store is not None
        await runtime.store.aput(("runs",), f"r{state['n']}", {"n": state["n"]})
        return {"n": state["n"] + 1}

    def read(state: S, runtime: Runtime[None]) -> S:
        assert runtime.store is not None
        return {"n": len(runtime.store.search(("runs",)))}

    async with AgentMemory(bb, "a1") as mem:
        g = StateGraph(S)
        g.add_node("write", write)
        g.add_node("read", read)
        g.add_edge(START, "write")
        g.add_edge("write", "read")
        g.add_edge("read", END)
        graph = g.compile(store=BlackboardStore(mem))
        assert await graph.ainvoke({"n": 1}) == {"n": 1}
        assert await graph.ainvoke({"n": 5}) == {"n": 2}
