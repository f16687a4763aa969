"""Traces that follow a memory (OpenTelemetry), off unless enabled.

Off (the default) nothing of OpenTelemetry is imported and the hot paths pay one check of
the module-level :data:`ENABLED` flag. On (``BLACKBOARD_TRACING=1``, read with the client's
settings at connect, or :func:`enable` in code), a write is a span, its W3C ``traceparent``
is stored with the entry and carried by the bus event the relay builds from it, and the
relay, the worker batch that consolidates it and the derived writes join the same trace
(docs/architecture.md, "Tracing"). The exporter follows the standard ``OTEL_*`` variables
(``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_SERVICE_NAME``...); it needs the ``[otel]`` extra.

A batch has many sources: its span is the child of the first source's context and links
to every source, and each source gets a span of its own in its own trace, linked to the
batch span (:func:`fan_in`), so every memory's trace shows where it went.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

__all__ = [
    "ENABLED",
    "INSTALL",
    "disable",
    "enable",
    "fan_in",
    "record",
    "span",
    "stage",
    "traceparent",
    "valid_traceparent",
]

#: Checked on every hot path before anything else of this module is touched.
ENABLED = False
INSTALL = "pip install 'reactive-blackboard[otel]'"
#: The tracer's instrumentation scope name.
NAME = "reactive-blackboard"

# W3C trace context, version 00: what is stored with an entry and carried on the bus. An
# entry's writer chooses it, so it is checked before use (and by relay.lua before relaying).
_TRACEPARENT = re.compile(r"00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")

_OFF: AbstractContextManager[Any] = nullcontext()
_tracer: Any = None
_propagator: Any = None
_owned_provider: Any = None


def valid_traceparent(tp: object) -> str | None:
    """``tp`` when it is a well-formed W3C traceparent (version 00), else None."""
    if isinstance(tp, bytes):
        tp = tp.decode("ascii", "replace")
    return tp if isinstance(tp, str) and _TRACEPARENT.fullmatch(tp) else None


def enable(provider: Any | None = None) -> None:
    """Turn tracing on for this process.

    ``provider``: an OpenTelemetry ``TracerProvider`` (tests pass one with an in-memory
    exporter). Without one, the global provider is used when the application installed an
    SDK one, else a provider exporting over OTLP/HTTP as the ``OTEL_*`` variables say is
    made and installed. Raises ImportError naming the extra when OpenTelemetry is missing.
    """
    global ENABLED, _tracer, _propagator, _owned_provider
    try:
        from opentelemetry import trace
        from opentelemetry.trace.propagation.tracecontext import (
            TraceContextTextMapPropagator,
        )
    except ImportError:
        raise ImportError(f"tracing needs OpenTelemetry: {INSTALL}") from None
    if provider is None:
        provider = trace.get_tracer_provider()
        if not hasattr(provider, "add_span_processor"):  # the API's no-op/proxy provider
            provider = _otlp_provider()
            trace.set_tracer_provider(provider)
            _owned_provider = provider
    _tracer = provider.get_tracer(NAME)
    _propagator = TraceContextTextMapPropagator()
    ENABLED = True


def _otlp_provider() -> Any:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        raise ImportError(f"tracing needs the OpenTelemetry SDK and exporter: {INSTALL}") from None
    attrs = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": NAME}
    provider = TracerProvider(resource=Resource.create(attrs))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


def disable() -> None:
    """Turn tracing off: no new traced work starts (spans already ended are still exported
    by their provider). The tracer is kept, so work traced when it began (a worker batch in
    flight) ends its spans normally."""
    global ENABLED
    ENABLED = False
    if _owned_provider is not None:  # ours (made from OTEL_*): what it holds goes out now
        _owned_provider.force_flush()


def _context(tp: str | bytes | None) -> Any:
    """The OpenTelemetry context a stored traceparent names (None: none or malformed)."""
    tp = valid_traceparent(tp)
    return None if tp is None else _propagator.extract({"traceparent": tp})


def _links(tps: Iterable[str | bytes | None]) -> list[Any]:
    from opentelemetry.trace import Link, get_current_span

    out = []
    for tp in dict.fromkeys(tps):
        ctx = _context(tp)
        if ctx is not None:
            out.append(Link(get_current_span(ctx).get_span_context()))
    return out


def traceparent() -> str | None:
    """The current span's W3C traceparent (None when tracing is off or no span is open)."""
    if not ENABLED:
        return None
    carrier: dict[str, str] = {}
    _propagator.inject(carrier)
    return carrier.get("traceparent")


@contextmanager
def span(name: str, attributes: Mapping[str, Any] | None = None, *,
         parent: str | None = None, links: Iterable[str | None] = ()) -> Iterator[Any]:
    """A span made current for the block: the child of ``parent`` (a traceparent) when one
    is given and valid, else of the current span; ``links`` to other traceparents."""
    ctx = _context(parent)
    with _tracer.start_as_current_span(
        name, context=ctx, links=_links(links), attributes=dict(attributes or {}),
    ) as sp:
        yield sp


def stage(name: str, attributes: Mapping[str, Any] | None = None) -> AbstractContextManager[Any]:
    """A span for a stage of some work (a recall's lexical search, fusion...) when tracing
    is on, else a shared no-op context: for code where an ``if`` per stage would clutter."""
    return span(name, attributes) if ENABLED else _OFF


@contextmanager
def fan_in(name: str, sources: Iterable[str | None],
           attributes: Mapping[str, Any] | None = None) -> Iterator[Any]:
    """A span over many sources' work (a worker batch): the child of the first valid
    source's context, linked to all of them; at its end each other source gets a span
    ``<name>.source`` in its own trace, over the same time, linked back to the batch span."""
    tps = [tp for tp in dict.fromkeys(sources) if valid_traceparent(tp)]
    attrs = {**(attributes or {}), "blackboard.sources": len(tps)}
    start = time.time_ns()
    with span(name, attrs, parent=tps[0] if tps else None, links=tps) as sp:
        yield sp
        own = traceparent()
    record(f"{name}.source", tps[1:], start, time.time_ns(), attributes, link=own)


def record(name: str, parents: Iterable[str | bytes | None], start_ns: int, end_ns: int,
           attributes: Mapping[str, Any] | None = None, *, link: str | None = None) -> None:
    """One span per valid parent traceparent, over ``start_ns``..``end_ns`` (work already
    done for each of them, such as one relay call moving many events); ``link``: a span
    they all belong to."""
    links = _links([link]) if link else []
    for tp in parents:
        ctx = _context(tp)
        if ctx is None:
            continue
        sp = _tracer.start_span(name, context=ctx, links=links,
                                attributes=dict(attributes or {}), start_time=start_ns)
        sp.end(end_time=end_ns)
