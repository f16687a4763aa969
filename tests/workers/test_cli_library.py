"""Issue 16: the library as a person holds it: explain() starts with the text, readable
reprs, a blocking facade for code without an event loop, and the pytest plugin."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import redis

from blackboard import Entry
from memory import MemoryQuery, TagFilter
from memory.sync import SyncMemory
from retrieval.scoring import ScoredEntry

VALUE = {"text": "Acme Corp pays invoices in 30 days", "source": "contract", "n": 3}


def _hit() -> ScoredEntry:
    e = Entry(id="01J0000000000000000000000A", scope="agent:a1:semantic", value=VALUE,
              tags=frozenset({"fact", "acme"}), key="fact:acme:terms",
              embedding=b"\0" * 1536)
    return ScoredEntry(entry=e, scope=e.scope, dense=0.71, bm25=3.2, fused=0.9,
                       strength=1.0, recency=0.5, importance=0.5, score=0.8)


def test_explain_starts_with_the_text() -> None:
    h = _hit()
    assert h.explain().startswith("'Acme Corp pays invoices in 30 days' 01J")
    assert "score=0.8000" in h.explain() and "bm25=3.200" in h.explain()


def test_readable_reprs() -> None:
    h = _hit()
    r = repr(h.entry)
    assert r.startswith("<Entry 01J") and "agent:a1:semantic" in r
    assert "'Acme Corp pays invoices in 30 days'" in r and "tags=[acme,fact]" in r
    assert "embedding" not in r and len(r) < 200  # not a 1,536-byte dump
    assert repr(h).startswith("<ScoredEntry score=0.800 agent:a1:semantic")
    assert Entry(id="x", scope="s", value=[1, {"a": 2}]).text == '[1,{"a":2}]'


def test_sync_memory_without_an_event_loop(redis_url: str, clean_redis: redis.Redis) -> None:
    with SyncMemory.connect(redis_url, "s1", teams=["t1"], default_retriever=False) as mem:
        mem.install_default_hierarchy()
        e = mem.store("remember the milk", tags={"todo"})
        assert e.text == "remember the milk"
        hits = mem.recall(MemoryQuery(order="newest", tag_filter=TagFilter(all_of={"todo"})))
        assert [h.entry.id for h in hits] == [e.id]
        assert mem.readable_scopes() == mem.memory.readable_scopes()  # sync attrs pass through
        assert "s1" in repr(mem)
    assert mem._runner.thread.is_alive() is False


async def test_sync_memory_inside_a_running_loop(redis_url: str,
                                                 clean_redis: redis.Redis) -> None:
    # A notebook cell runs inside Jupyter's loop: the facade must not need asyncio.run.
    assert asyncio.get_running_loop() is not None
    with SyncMemory.connect(redis_url, "s2", default_retriever=False) as mem:
        assert mem.store({"text": "inside a loop"}).text == "inside a loop"


PLUGIN_TESTS = '''
import pytest

@pytest.mark.asyncio
async def test_agent_memory(agent_memory, blackboard):
    e = await agent_memory.store("plugin memory", tags={"p"})
    assert (await blackboard.scope(e.scope).get(e.id)).text == "plugin memory"
    assert agent_memory.agent_id == "test-agent"

def test_sync(sync_agent_memory, blackboard_url, blackboard_server):
    assert blackboard_url == blackboard_server.url
    assert sync_agent_memory.store("sync plugin").text == "sync plugin"

def test_each_test_starts_empty(sync_agent_memory):
    assert sync_agent_memory.stats()["agent:test-agent:working"].count == 0
'''


@pytest.mark.process  # pytest in a subprocess
def test_pytest_plugin_in_a_user_project(tmp_path: Path) -> None:
    (tmp_path / "test_user_agent.py").write_text(textwrap.dedent(PLUGIN_TESTS))
    # Installed, the entry point (named "blackboard") loads it, as tests/wheel_smoke.py
    # checks; an editable install made before the entry point existed has none. Load it
    # by module name with the entry point blocked: the same either way, never twice.
    plugin = ["-p", "no:blackboard", "-p", "pytest_blackboard"]
    for mode in ("strict", "auto"):
        r = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin,
             "-o", f"asyncio_mode={mode}", "-c", "/dev/null",
             "--rootdir", str(tmp_path), str(tmp_path)],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
        assert r.returncode == 0 and "3 passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
