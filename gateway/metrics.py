"""Prometheus metrics of one gateway process: requests, latency, errors and refusals by
route (the route template, so ids do not explode the label set)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .progress_ages import ProgressAges

__all__ = ["Metrics", "MetricsMiddleware"]


class Metrics:
    """The gateway's metrics; ``pending_embeddings`` (read at each scrape): the entries
    this process's recall indexes hold that still wait for a vector -- a backlog that
    grows means the model is behind the writes (they rank by BM25 meanwhile)."""

    def __init__(self, pending_embeddings: Callable[[], float] | None = None,
                 pools: Callable[[], float] | None = None) -> None:
        # A registry per app: several apps in one process (tests) do not collide.
        self.registry = CollectorRegistry()
        self.progress = ProgressAges(self.registry)
        self.embeddings_pending = Gauge(
            "gateway_recall_embeddings_pending",
            "Entries in this process's recall indexes still waiting for a vector",
            registry=self.registry)
        self.embeddings_pending.set_function(pending_embeddings or (lambda: 0.0))
        self.pools_open = Gauge(
            "gateway_pools_open",
            "Connection pools this process holds open (one per verified credential)",
            registry=self.registry)
        self.pools_open.set_function(pools or (lambda: 0.0))
        self.requests = Counter("gateway_requests", "Requests by route, method and status",
                                ["route", "method", "status"], registry=self.registry)
        self.latency = Histogram(
            "gateway_request_seconds", "Request latency by route", ["route", "method"],
            buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
            registry=self.registry)
        self.errors = Counter("gateway_errors", "Failed requests by route and error kind",
                              ["route", "error"], registry=self.registry)
        self.denied = Counter(
            "gateway_access_denied",
            "Requests refused for access (403), by route and whether Redis refused (NOPERM)",
            ["route", "by_redis"], registry=self.registry)

    def render(self) -> bytes:
        return generate_latest(self.registry)


def route_of(scope: Scope) -> str:
    r: Any = scope.get("route")
    return str(getattr(r, "path", None) or "unmatched")


class ResponseStatus:
    """An ASGI ``send`` that notes the response's status code on its way (500 until a
    response starts: a request that raised before answering is counted as the 500 the
    server sends)."""

    def __init__(self, send: Send) -> None:
        self.code = 500
        self._send = send

    async def send(self, msg: Message) -> None:
        if msg["type"] == "http.response.start":
            self.code = int(msg["status"])
        await self._send(msg)


class MetricsMiddleware:
    """Times every HTTP request and counts it by the matched route's template."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        answer = ResponseStatus(send)
        try:
            await self.app(scope, receive, answer.send)
        finally:
            status = answer.code
            route, method = route_of(scope), scope["method"]
            self.metrics.requests.labels(route, method, str(status)).inc()
            self.metrics.latency.labels(route, method).observe(time.perf_counter() - t0)
            if status >= 400:
                kind = str(scope.get("state", {}).get("error_kind", status))
                self.metrics.errors.labels(route, kind).inc()
