"""Tracing on, into the OpenTelemetry SDK's in-memory exporter, for one test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from blackboard import tracing


@contextmanager
def in_memory_spans() -> Iterator[Any]:
    """Tracing on for the block, its spans in the yielded ``InMemorySpanExporter``
    (``get_finished_spans()``); off again afterwards."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(provider)
    try:
        yield exporter
    finally:
        tracing.disable()
        provider.shutdown()


def traceparent_of(span: Any) -> str:
    """The W3C traceparent of a finished span."""
    c = span.get_span_context()
    return f"00-{c.trace_id:032x}-{c.span_id:016x}-{int(c.trace_flags):02x}"
