"""``create_app(settings)``: the gateway's ASGI app (REST under ``/v1``, health, metrics,
OpenAPI at ``/docs``, and the mounts: MCP at ``/mcp``, the dashboard at ``/``).

A mount is a function ``mount(app) -> AsyncContextManager | None`` (:data:`MOUNTS`); the
context it returns runs for the app's lifetime (the MCP session manager needs one).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response

from blackboard import AccessDenied, Blackboard, BlackboardError, ClientSettings, tracing
from blackboard.ratelimit import RateLimiter
from memory.catalog import catalog

from . import mcp_server
from .caller import Callers, bearer
from .errors import (
    GatewayError,
    error_response,
    install_handlers,
    refused_by_redis,
    status_of,
)
from .limits import BodyLimit
from .local_only import LocalOnly
from .metrics import Metrics, MetricsMiddleware, route_of
from .refusals import BookkeepingUnavailable
from .routes import dashboard
from .routes.json_route import JsonRoute
from .settings import GatewaySettings
from .traces import TracingMiddleware

__all__ = ["MOUNTS", "Mount", "app_from_env", "create_app"]

log = logging.getLogger(__name__)

Mount = Callable[[FastAPI], "AbstractAsyncContextManager[Any] | None"]

#: What every app mounts besides REST: the MCP server, then the dashboard. Both need only
#: the ``[gateway]`` extra, like the rest of the app.
MOUNTS: tuple[Mount, ...] = (mcp_server.mount, dashboard.mount)


def create_app(settings: GatewaySettings | None = None, *,
               mounts: tuple[Mount, ...] = MOUNTS) -> FastAPI:
    """The gateway app. ``app.state``: ``settings``, ``callers`` (:class:`Callers`),
    ``metrics`` (:class:`Metrics`), ``service`` (the bookkeeping :class:`Blackboard`,
    open while the app runs; None with no rate limit), ``limiter``."""
    s = settings or GatewaySettings.from_env()
    contexts: list[AbstractAsyncContextManager[Any]] = []

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if ClientSettings.from_env().tracing and not tracing.ENABLED:
            tracing.enable()  # from the first request, not the first caller's connect
        _load_catalog()
        async with AsyncExitStack() as stack:
            app.state.service = None
            app.state.limiter = None
            if s.rate > 0 or not s.insecure_local:
                svc = await Blackboard.connect(s.bookkeeping_url or None)
                stack.push_async_callback(svc.close)
                app.state.service = svc
                await _load_scripts(svc)
                if s.rate > 0:
                    app.state.limiter = RateLimiter(svc, s.rate, s.burst)
                    stack.push_async_callback(app.state.limiter.aclose)
            stack.push_async_callback(app.state.callers.aclose)
            for c in contexts:
                await stack.enter_async_context(c)
            yield

    app = FastAPI(title="Reactive Blackboard gateway", version="1",
                  description="Agent memory over REST (and MCP at /mcp). Every request runs "
                              "as its token's Redis user.", lifespan=lifespan)
    app.state.settings = s
    app.state.callers = Callers(s)
    app.state.metrics = Metrics(app.state.callers.pending_embeddings,
                                lambda: float(app.state.callers.pools()))
    install_handlers(app)
    _count_refusals(app)

    from .routes import beliefs, context, health, memories, streams
    from .routes import feedback as feedback_route
    from .routes import timeline as timeline_route

    for r in (health.router, memories.router, beliefs.router, context.router,
              feedback_route.router, streams.router, timeline_route.router):
        # The routes themselves, not the router: an included router is matched lazily,
        # every route of each router before it twice a request (a recall's routing, from
        # the body-limit middleware to its handler, took 0.25 ms in a serving gateway and
        # 0.16 ms flat). Each router's prefix, tags and responses are in its routes.
        app.router.routes.extend(r.routes)
    # The hot routes (JSON bodies on fixed paths: store, recall...) are matched first: a
    # recall was tried against the eight routes before it (~40 µs). Nothing else matches
    # their method and path.
    app.router.routes.sort(key=lambda r: not (isinstance(r, JsonRoute) and not r.param_convertors))
    for mount in mounts:
        ctx = mount(app)
        if ctx is not None:
            contexts.append(ctx)
    app.add_middleware(BodyLimit, limit=s.body_limit)
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics)
    app.add_middleware(TracingMiddleware)
    if s.insecure_local:  # outermost: nothing runs for a foreign Host or Origin
        app.add_middleware(LocalOnly)
    return app


def _count_refusals(app: FastAPI) -> None:
    """Library and Redis errors answered by the same mapping, each 403 counted with
    whether Redis itself refused (NOPERM) or the library's access check did."""

    last_logged = [-60.0]

    async def on_error(request: Request, exc: Exception) -> Response:
        status, body, _ = status_of(exc)
        if status == 401 and app.state.settings.insecure_local:
            # No token to blame: the gateway's own URL stopped logging in (the default
            # user protected under it, a rotated password). Say so, once a minute.
            exc = BookkeepingUnavailable(
                f"this --insecure-local gateway's Redis login was refused ({body.detail}); "
                "the operator must give it a URL with the password "
                "(BLACKBOARD_GATEWAY_REDIS_URL / --redis-url)")
            if time.monotonic() - last_logged[0] > 60:
                last_logged[0] = time.monotonic()
                log.error("%s", exc)
            status, body, _ = status_of(exc)
        request.state.error_kind = body.error
        if status == 401 and not isinstance(exc, GatewayError):
            # Redis refused a cached token's re-login (revoked): drop its pool for good.
            token = bearer(request)
            if token:
                await app.state.callers.forget(token)
        if status == 403:
            app.state.metrics.denied.labels(
                route_of(request.scope), "yes" if refused_by_redis(exc) else "no").inc()
        return error_response(exc)

    for typ in (GatewayError, BlackboardError):
        app.add_exception_handler(typ, on_error)


def _load_catalog() -> None:
    """Load the transformer catalog now, not in a request: every edge read checks its
    transformer's name against it, and its first load (importing the consolidation
    package: ~0.25 s of CPU) fell on the first memory map a gateway served. Without one
    installed, edge reads fail as they would have."""
    with contextlib.suppress(LookupError, TypeError):
        catalog()


async def _load_scripts(svc: Blackboard) -> None:
    """Agents may only EVALSHA: make sure the scripts are there (a service connection
    may load them; one that may not leaves it to `blackboard acl grant`, and /readyz
    says what is missing)."""
    from blackboard.acl import AclAdmin

    with contextlib.suppress(AccessDenied):
        await AclAdmin(svc).load_scripts()


def app_from_env() -> FastAPI:
    """``uvicorn --factory gateway.app:app_from_env``."""
    from .logs import install

    install()
    return create_app(GatewaySettings.from_env())

