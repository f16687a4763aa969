"""A memory's trace through a real worker (in this process, so the SDK's in-memory
exporter sees every span): write -> relay -> the worker's batch -> the transformer's fire ->
the derived write, one trace; a batch of many writes links them all."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from workers_support import WorkerProcs

from blackboard import Blackboard
from memory.registry import Registry
from memory.subscriptions import MemorySubscription, Trigger
from tests.support_tracing import in_memory_spans, traceparent_of
from workers.settings import WorkerSettings
from workers.worker import Worker

pytest.importorskip("opentelemetry.sdk.trace", reason="needs the [otel] extra")
#: OpenTelemetry is a framework integration: CI runs these on its first Redis only.
pytestmark = pytest.mark.integration

FAST = WorkerSettings(heartbeat_ms=200, lease_ttl_ms=1000, trigger_check_ms=50, block_ms=100)


@pytest.fixture()
def spans() -> Iterator[Any]:
    with in_memory_spans() as exporter:
        yield exporter


async def _worker(bb: Blackboard, trigger: Trigger) -> Worker:
    reg = Registry(bb)
    await reg.save_edge(MemorySubscription("agent:*:working", "agent:{1}:stm", "identity",
                                           trigger=trigger))
    await reg.aclose()
    w = Worker(bb, "summarize", FAST)
    await w.start()
    return w


async def _derived(bb: Blackboard, n: int) -> list[Any]:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        got = await bb.scope("agent:a1:stm").entries(limit=None)
        if len(got) >= n:
            return got
        await asyncio.sleep(0.05)
    raise AssertionError(f"the worker derived fewer than {n} entries in 15 s")


async def _spans_named(spans: Any, name: str, n: int) -> list[Any]:
    # The derived write returns before the fire span ends: wait for it, briefly.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        got = [s for s in spans.get_finished_spans() if s.name == name]
        if len(got) >= n:
            return got
        await asyncio.sleep(0.02)
    raise AssertionError(f"fewer than {n} {name} spans")


async def test_a_write_through_a_worker_is_one_trace(bb: Blackboard, spans: Any) -> None:
    w = await _worker(bb, Trigger.count(1))
    try:
        e = await bb.scope("agent:a1:working").write({"text": "traced step"})
        (copy,) = await _derived(bb, 1)
        (fire,) = await _spans_named(spans, "dataflow.fire", 1)
    finally:
        await w.stop()
    by_id = {s.context.span_id: s for s in spans.get_finished_spans()}
    write = next(s for s in by_id.values() if s.name == "blackboard.write")
    trace = {s.name for s in by_id.values() if s.context.trace_id == write.context.trace_id}
    assert {"blackboard.write", "blackboard.relay", "dataflow.buffer", "dataflow.fire",
            "blackboard.write_many"} <= trace
    assert e.traceparent == traceparent_of(write)
    # parentage: write <- relay, write <- buffer, write <- fire <- derived write
    def parent(name: str) -> Any:
        s = next(s for s in by_id.values()
                 if s.name == name and s.context.trace_id == write.context.trace_id)
        return by_id.get(s.parent.span_id) if s.parent else None
    assert parent("blackboard.relay") is write
    assert parent("dataflow.buffer") is write
    assert parent("dataflow.fire") is write
    assert parent("blackboard.write_many") is fire
    assert fire.attributes["blackboard.edge"] and fire.attributes["blackboard.entries"] == 1
    assert copy.traceparent is not None and copy.traceparent[3:35] == e.traceparent[3:35]


async def test_a_batch_of_writes_links_each_and_each_trace_shows_it(bb: Blackboard,
                                                                   spans: Any) -> None:
    w = await _worker(bb, Trigger.count(3))
    try:
        writes = [await bb.scope("agent:a1:working").write({"text": f"step {i}"})
                  for i in range(3)]
        await _derived(bb, 3)
        (fire,) = await _spans_named(spans, "dataflow.fire", 1)
        sources = await _spans_named(spans, "dataflow.fire.source", 2)
    finally:
        await w.stop()
    traces = {e.traceparent[3:35] for e in writes if e.traceparent}
    assert len(traces) == 3  # one trace per memory
    assert {f"{ln.context.trace_id:032x}" for ln in fire.links} == traces
    assert fire.attributes["blackboard.sources"] == 3
    # the fire span sits in the first source's trace; the others each get a source span
    # in their own trace, linked back to it
    assert f"{fire.context.trace_id:032x}" == writes[0].traceparent[3:35]
    assert {f"{s.context.trace_id:032x}" for s in sources} == traces - {
        f"{fire.context.trace_id:032x}"}
    for s in sources:
        assert [ln.context.span_id for ln in s.links] == [fire.context.span_id]


class _Collector:
    """An OTLP/HTTP trace receiver on a loopback port: the spans a process exported."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        self.spans: list[Any] = []
        seen = self.spans

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                req = ExportTraceServiceRequest.FromString(body)
                for rs in req.resource_spans:
                    for ss in rs.scope_spans:
                        seen.extend(ss.spans)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.process
async def test_a_worker_process_continues_the_writers_trace(
        bb: Blackboard, spans: Any, worker_procs: WorkerProcs) -> None:
    # The writer (this process) and the worker (another, configured by the environment
    # alone) export to different places; the trace id travels through Redis.
    reg = Registry(bb)
    await reg.save_edge(MemorySubscription("agent:*:working", "agent:{1}:stm", "identity",
                                           trigger=Trigger.count(1)))
    await reg.aclose()
    col = _Collector()
    p = worker_procs.start("summarize", BLACKBOARD_TRACING="1", OTEL_SERVICE_NAME="bb-worker",
                           OTEL_EXPORTER_OTLP_ENDPOINT=col.url, OTEL_BSP_SCHEDULE_DELAY="100")
    try:
        e = await bb.scope("agent:a1:working").write({"text": "across processes"})
        await _derived(bb, 1)
        assert e.traceparent is not None
        trace_id = bytes.fromhex(e.traceparent[3:35])
        want = {"blackboard.relay", "dataflow.buffer", "dataflow.fire", "blackboard.write_many"}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            got = {s.name for s in col.spans if s.trace_id == trace_id}
            if want <= got:
                break
            await asyncio.sleep(0.1)
        assert want <= got, (got, p.poll())
        (write,) = [s for s in spans.get_finished_spans() if s.name == "blackboard.write"]
        fire = next(s for s in col.spans if s.name == "dataflow.fire")
        assert fire.parent_span_id == write.context.span_id.to_bytes(8, "big")
    finally:
        worker_procs.terminate(p)
        col.close()
