"""A REST request is a span when tracing is on (gateway.traces), continuing the trace of
a caller that sends a W3C ``traceparent``; the memory's write is its child. In-process
(the SDK's in-memory exporter must see the spans), on an insecure-local gateway."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from gateway.settings import GatewaySettings
from tests.support_tracing import in_memory_spans

pytest.importorskip("opentelemetry.sdk.trace", reason="needs the [otel] extra")
#: OpenTelemetry is a framework integration: CI runs these on its first Redis only.
pytestmark = pytest.mark.integration

CALLER = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"


@pytest.fixture()
def spans() -> Iterator[Any]:
    with in_memory_spans() as exporter:
        yield exporter


@pytest.fixture()
def client(redis_url: str, clean_redis: object) -> Iterator[TestClient]:
    app = create_app(GatewaySettings(redis_url=redis_url, insecure_local=True, rate=0))
    with TestClient(app, base_url="http://127.0.0.1") as c:
        yield c


def test_a_request_continues_the_callers_trace(client: TestClient, spans: Any) -> None:
    r = client.post("/v1/memories", json={"value": "traced over REST"},
                    headers={"traceparent": CALLER})
    assert r.status_code == 201, r.text
    got = spans.get_finished_spans()
    (req,) = [s for s in got if s.name == "gateway.request"]
    assert f"{req.context.trace_id:032x}" == "ab" * 16
    assert f"{req.parent.span_id:016x}" == "cd" * 8
    assert req.attributes["http.route"] == "/v1/memories"
    assert req.attributes["http.response.status_code"] == 201
    (write,) = [s for s in got if s.name == "blackboard.write"]
    assert write.parent.span_id == req.context.span_id


def test_a_malformed_header_starts_a_new_trace(client: TestClient, spans: Any) -> None:
    r = client.get("/v1/memories/NOSUCH", headers={"traceparent": "00-junk"})
    assert r.status_code == 404
    (req,) = [s for s in spans.get_finished_spans() if s.name == "gateway.request"]
    assert req.parent is None
    assert req.attributes["http.response.status_code"] == 404


def test_tracing_off_no_span(client: TestClient) -> None:
    with in_memory_spans() as spans:
        pass
    assert client.post("/v1/memories", json={"value": "untraced"}).status_code == 201
    assert spans.get_finished_spans() == ()
