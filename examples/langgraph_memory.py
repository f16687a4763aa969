"""A LangGraph agent with long-term memory on the blackboard, across threads.

No LLM: one deterministic node. A message "remember: ..." stores a memory for the user
(``store.put``); any other message is answered from the user's memories found by meaning
(``store.search(..., query=...)``, our recall). Each conversation is its own thread (the
checkpointer keeps the thread's messages); the memories live in the store, so a new
thread of the same user knows what an earlier one was told::

    python examples/langgraph_memory.py redis://127.0.0.1:6379/0

Needs ``pip install 'reactive-blackboard[langgraph,semantic]'`` (without ``semantic``,
recall ranks by words only).
"""

from __future__ import annotations

import operator
import sys
import uuid
from typing import Annotated, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from integrations.langgraph import BlackboardStore


class State(TypedDict):
    messages: Annotated[list[str], operator.add]


class Context(TypedDict):
    user_id: str


def respond(state: State, runtime: Runtime[Context]) -> dict[str, list[str]]:
    assert runtime.store is not None
    namespace = ("users", runtime.context["user_id"], "memories")
    text = state["messages"][-1]
    if text.lower().startswith("remember:"):
        fact = text.split(":", 1)[1].strip()
        runtime.store.put(namespace, str(uuid.uuid4()), {"text": fact})
        return {"messages": [f"noted: {fact}"]}
    # ranked by meaning; memories the recall finds unrelated come unscored: left out here
    hits = [h for h in runtime.store.search(namespace, query=text, limit=3) if h.score]
    if not hits:
        return {"messages": ["I know nothing about that yet."]}
    return {"messages": ["you told me: " + "; ".join(h.value["text"] for h in hits)]}


def build(store: BlackboardStore):  # type: ignore[no-untyped-def]
    graph = StateGraph(State, context_schema=Context)
    graph.add_node("respond", respond)
    graph.add_edge(START, "respond")
    graph.add_edge("respond", END)
    return graph.compile(checkpointer=InMemorySaver(), store=store)


def chat(graph, thread: str, user: str, text: str) -> str:  # type: ignore[no-untyped-def]
    out = graph.invoke({"messages": [text]}, {"configurable": {"thread_id": thread}},
                       context={"user_id": user})
    return str(out["messages"][-1])


def main(url: str | None, agent: str = "assistant") -> list[str]:
    """Two threads of user u1 and one of u2; returns the replies."""
    with BlackboardStore.connect(url, agent) as store:
        graph = build(store)
        return [
            chat(graph, "thread-1", "u1", "remember: I drink green tea, no sugar"),
            chat(graph, "thread-1", "u1", "remember: my invoices go to billing@acme.test"),
            chat(graph, "thread-2", "u1", "what do I like to drink?"),  # a new thread
            chat(graph, "thread-3", "u2", "what do I like to drink?"),  # another user
        ]


if __name__ == "__main__":
    for line in main(sys.argv[1] if len(sys.argv) > 1 else None):
        print(line)
