"""The example graph (examples/langgraph_memory.py) runs: what one thread was told, a new
thread of the same user recalls; another user's thread does not see it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import redis

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
