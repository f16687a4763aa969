"""Traces that follow a memory through the substrate (blackboard.tracing): the write span,
its context stored with the entry and carried by the bus event, the relay's span; and
tracing off costs no OpenTelemetry import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from blackboard import Blackboard, ClientSettings, WriteRequest, tracing
from blackboard.entry import decode_event
from blackboard.keys import PartitionKeys
from blackboard.request import encode_write
from blackboard.scripts import run_script
from blackboard.tracing import valid_traceparent
from tests.support_tracing import in_memory_spans, traceparent_of

otel_sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="needs the [otel] extra")


@pytest.fixture()
def spans() -> Iterator[Any]:
    with in_memory_spans() as exporter:
        yield exporter


async def _bus_events(bb: Blackboard, scope: str) -> list[Any]:
    bus = PartitionKeys(bb.scope(scope).partition).bus
    return [decode_event(i, f) for i, f in await bb.client.xrange(bus)]


@pytest.mark.integration
async def test_write_span_context_rides_the_entry_and_the_bus_event(bb: Blackboard,
                                                                    spans: Any) -> None:
    e = await bb.scope("agent:a1:working").write({"text": "hello"})
    (write,) = spans.get_finished_spans()
    assert write.name == "blackboard.write"
    assert write.attributes["blackboard.scope"] == "agent:a1:working"
    assert e.traceparent == traceparent_of(write)
    assert (await bb.scope("agent:a1:working").get(e.id)).traceparent == e.traceparent
    await bb.relays.relay_all()
    (ev,) = await _bus_events(bb, "agent:a1:working")
    assert ev.traceparent == e.traceparent
    relay = [s for s in spans.get_finished_spans() if s.name == "blackboard.relay"]
    assert len(relay) == 1
    assert relay[0].parent.span_id == write.context.span_id
    assert relay[0].context.trace_id == write.context.trace_id


@pytest.mark.integration
async def test_a_batch_is_one_span_whose_context_every_item_carries(bb: Blackboard,
                                                                   spans: Any) -> None:
    got = await bb.scope("agent:a1:working").write_many([WriteRequest({"i": i}) for i in range(3)])
    (batch,) = spans.get_finished_spans()
    assert batch.name == "blackboard.write_many"
    assert batch.attributes["blackboard.entries"] == 3
    assert {e.traceparent for e in got} == {traceparent_of(batch)}


async def test_a_later_untraced_change_drops_the_context(bb: Blackboard, spans: Any) -> None:
    s = bb.scope("agent:a1:working")
    e = await s.write({"text": "v1"}, key="k")
    e2 = await s.write({"text": "v1b"}, key="k2")
    tracing.disable()
    # an upsert by key, and an update: their content events are not the traced write's
    assert (await s.write({"text": "v2"}, key="k")).traceparent is None
    assert (await s.get(e.id)).traceparent is None
    await s.update(e2.id, value={"text": "v2b"})
    assert (await s.get(e2.id)).traceparent is None
    await bb.relays.relay_all()
    assert [ev.traceparent for ev in await _bus_events(bb, s.id)] == [None, None]


@pytest.mark.integration
async def test_an_upsert_or_supersession_carries_its_own_context(bb: Blackboard,
                                                                 spans: Any) -> None:
    s = bb.scope("agent:a1:working")
    first = await s.write({"text": "v1"}, key="k")
    again = await s.write({"text": "v2"}, key="k")
    assert again.id == first.id and again.version == 2
    assert again.traceparent is not None and again.traceparent != first.traceparent
    old = await s.write({"text": "belief 1"}, key="b")
    new = await s.write({"text": "belief 2"}, key="b", key_mode="supersede")
    # the replaced entry's `updated` event is the new write's doing
    assert (await s.get(old.id)).traceparent == new.traceparent
    assert [sp.name for sp in spans.get_finished_spans()] == ["blackboard.write"] * 4


async def test_a_malformed_context_is_never_relayed(bb: Blackboard) -> None:
    # An agent may write anything into its own entry with raw commands: the relay carries
    # only a well-formed traceparent, and the write script ignores a malformed one.
    s = bb.scope("agent:a1:working")
    e = await s.write({"text": "x"})
    await bb.client.hset(s.keys.entry(e.id), "tp", "00-zz\n-forged")
    await bb.relays.relay_all()
    assert [ev.traceparent for ev in await _bus_events(bb, s.id)] == [None]
    enc = encode_write(WriteRequest({"text": "y"}), s.id, 1 << 20, "junk")
    await run_script(bb.client, "write", s.keys.script_keys(), list(enc.args))
    assert (await s.get(enc.entry_id)).traceparent is None


def test_valid_traceparent() -> None:
    good = "00-" + "a" * 32 + "-" + "b" * 16 + "-01"
    assert valid_traceparent(good) == good
    assert valid_traceparent(good.encode()) == good
    for bad in (None, 7, "", good.upper(), good + "x", "01" + good[2:], good.replace("-", "_")):
        assert valid_traceparent(bad) is None


def test_tracing_is_a_client_setting() -> None:
    assert ClientSettings.from_env({}).tracing is False
    assert ClientSettings.from_env({"BLACKBOARD_TRACING": "1"}).tracing is True


_OFF = """
import asyncio, json, sys
from blackboard import Blackboard
import memory
from retrieval import Retriever
from retrieval.embedders import HashingEmbedder

async def main():
    async with Blackboard.connect(sys.argv[1], partitions=8) as bb:
        e = await bb.scope("agent:off:working").write({"text": "untraced"})
        await bb.scope("agent:off:working").write_many(["a", "b"])
        await bb.relays.relay_all()
        r = Retriever(bb, embedder=HashingEmbedder())  # no model to load
        async with memory.AgentMemory(bb, agent_id="off", retriever=r) as mem:
            assert await mem.recall("untraced")
        await r.aclose()
        print(json.dumps({"tp": e.traceparent,
                          "otel": sorted(m for m in sys.modules if m.startswith("opentelemetry"))}))
asyncio.run(main())
"""


def _run(code: str, *args: str,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


@pytest.mark.integration
@pytest.mark.process
def test_tracing_off_imports_no_tracing(redis_url: str, clean_redis: object) -> None:
    # redis-py (8.x) imports opentelemetry's metrics API when it is installed; tracing off,
    # nothing of its trace API, SDK, propagators or exporters is imported by us.
    r = _run(_OFF, redis_url, env={"BLACKBOARD_TRACING": ""})
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["tp"] is None
    ours = [m for m in out["otel"] if m.startswith((
        "opentelemetry.sdk.trace", "opentelemetry.trace.propagation.tracecontext",
        "opentelemetry.exporter", "opentelemetry.propagate"))]
    assert ours == []


_MISSING = """
import asyncio, sys
sys.modules["opentelemetry"] = None  # as if the [otel] extra were not installed
from blackboard import Blackboard, BlackboardError, ClientSettings

async def main():
    async with Blackboard.connect(sys.argv[1], partitions=8) as bb:   # tracing off: works
        await bb.scope("agent:off:working").write({"text": "fine"})
    try:
        async with Blackboard.connect(sys.argv[1], settings=ClientSettings(partitions=8,
                                                                           tracing=True)):
            pass
    except BlackboardError as exc:
        print(exc)
asyncio.run(main())
"""


@pytest.mark.integration
@pytest.mark.process
def test_without_the_extra_tracing_off_works_and_on_names_the_extra(
        redis_url: str, clean_redis: object) -> None:
    r = _run(_MISSING, redis_url, env={"BLACKBOARD_TRACING": ""})
    assert r.returncode == 0, r.stderr[-2000:]
    (line,) = r.stdout.strip().splitlines()
    assert "pip install 'reactive-blackboard[otel]'" in line


@pytest.mark.integration
def test_enable_without_the_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(ImportError, match=r"pip install 'reactive-blackboard\[otel\]'"):
        tracing.enable()
    assert tracing.ENABLED is False
