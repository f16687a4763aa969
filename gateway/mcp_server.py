"""Memory as MCP tools: remember, recall, forget, list_tags, memory_map.

One :class:`~mcp.server.mcpserver.MCPServer` (the official ``mcp`` SDK, 2.x) serves two
transports: streamable HTTP at ``/mcp`` inside the gateway (:func:`mount_mcp`; each call
runs as the caller of the request's ``Authorization: Bearer`` token) and stdio for
desktop clients (``blackboard mcp``; one caller, the token of ``BLACKBOARD_TOKEN``). Either
way a tool runs on the caller's :class:`~gateway.caller.Caller`, a connection logged in as
the token's Redis user, so Redis confines what a tool can reach exactly as it does a REST
request. Failures reach the model as tool errors ``"<kind>: <detail>"``, the kind and
detail of the REST error body (``AccessDenied``, ``NotFound``...), never a traceback.
Answers and descriptions are shaped for a model's budget in :mod:`gateway.mcp_render`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import FastAPI
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult
from pydantic import AfterValidator, BaseModel, Field, JsonValue, ValidationError, WithJsonSchema
from starlette.requests import Request
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from blackboard import Blackboard
from memory import MemoryLevel, MemoryQuery, TagFilter
from memory.aliases import logged_alias
from memory.levels import unknown_level
from memory.response_bodies import RecallResponse, TagsOut
from retrieval.lens import known_lenses
from retrieval.query import MAX_BUDGET_TOKENS, MAX_TIMEOUT_MS, Intent

from .caller import Caller, bearer
from .errors import error_response, refused_by_redis, status_of
from .maps import caller_map
from .mcp_beliefs import add_belief_tools
from .mcp_context import add_context_tool
from .mcp_feedback import add_feedback_tool
from .mcp_render import Recalled, answer, map_summary, tool
from .mcp_timeline import add_timeline_tools
from .routes.deps import authorized

__all__ = ["MCP_PATH", "CallerOf", "build_mcp", "mount", "mount_mcp", "tool_error"]

#: Where the gateway serves MCP (streamable HTTP).
MCP_PATH = "/mcp"

#: How a tool finds its caller: from the request context (HTTP) or fixed (stdio).
CallerOf = Callable[[Context], Awaitable[Caller]]

_LEVELS: list[JsonValue] = [m.value for m in MemoryLevel]

INSTRUCTIONS = (
    "Long-lived memory shared with other agents, on Redis. `remember` stores a note, fact "
    "or event; `recall` finds memories by meaning and filters (best first); `forget` "
    "deletes one by id; `list_tags` and `memory_map` show what is there; `confirm` and "
    "`correct` give feedback on a belief (a semantic fact). You can reach "
    "only your own memory, your teams' and the read-only collective one: anything else "
    "is refused."
)


def _known_level(v: str) -> str:
    if MemoryLevel.named(v) is None:
        raise ValueError(unknown_level(v))
    return v


#: A level name; its schema lists the levels so a model picks a valid one.
LevelName = Annotated[str, AfterValidator(_known_level),
                      WithJsonSchema({"type": "string", "enum": _LEVELS})]


class Remembered(BaseModel):
    id: str = Field(description="The memory's id (for forget).")
    scope: str = Field(description="Where it was stored.")
    version: int


class Forgotten(BaseModel):
    id: str
    forgotten: bool


def tool_error(exc: BaseException) -> tuple[ToolError, int]:
    """A failure as the tool error a model reads, ``"<kind>: <detail>"`` (the kinds and
    details of the REST error bodies, :func:`gateway.errors.status_of`), and its status."""
    if isinstance(exc, ValidationError):  # a query model's validator (contradictory tags...)
        errs = exc.errors()
        field = ".".join(str(p) for p in errs[0]["loc"]) if errs else "query"
        msg = errs[0]["msg"] if errs else str(exc)
        return ToolError(f"validation: {field or 'query'}: {msg}"), 422
    status, body, _ = status_of(exc)
    return ToolError(f"{body.error}: {body.detail}"), status


@contextlib.asynccontextmanager
async def _refusals(ctx: Context) -> AsyncIterator[None]:
    try:
        yield
    except ToolError:
        raise
    except Exception as exc:
        err, status = tool_error(exc)
        if status == 403:
            _count_denied(ctx, exc)
        raise err from exc


def _count_denied(ctx: Context, exc: BaseException) -> None:
    """Count a refusal beside the REST ones (``gateway_access_denied{route="/mcp"}``),
    saying whether Redis itself refused it (NOPERM) or the library's access check did."""
    request = ctx.request_context.request
    metrics = getattr(getattr(getattr(request, "app", None), "state", None), "metrics", None)
    if metrics is None:  # stdio: no gateway to count in
        return
    metrics.denied.labels(MCP_PATH, "yes" if refused_by_redis(exc) else "no").inc()


def _ms(t: datetime | None) -> int | None:
    if t is None:
        return None
    return int((t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp() * 1000)


def build_mcp(caller_of: CallerOf) -> MCPServer:
    """The memory tools; each runs as ``caller_of(ctx)``."""
    # The SDK configures the root logger at construction: WARNING, not its INFO default,
    # or every INFO line of the process (an HTTP client's per-request line...) is rendered
    # by rich, which costs milliseconds a call.
    mcp: MCPServer = MCPServer("reactive-blackboard", instructions=INSTRUCTIONS,
                               log_level="WARNING")

    @tool(mcp, "Remember", destructive_hint=False)
    async def remember(
        ctx: Context,
        content: Annotated[str, Field(
            min_length=1,
            description="What to remember, written to make sense on its own later "
                        "(a fact, decision, event, preference or procedure).")],
        level: Annotated[LevelName, Field(description=
            "Memory level: working (current task, default), stm (short-term), episodic "
            "(what happened), semantic (facts), procedural (how to do things), sensory "
            "(raw input, expires in minutes).")] = "working",
        tags: Annotated[list[str], Field(
            description="Short labels to filter by later, e.g. ['fact', 'customer:acme'].")
        ] = [],  # noqa: B006 - pydantic copies defaults; the schema shows []
        team: Annotated[str | None, Field(
            description="Store in this team's memory (shared with its members) instead "
                        "of your own.")] = None,
        key: Annotated[str | None, Field(
            description="A unique name within the level: storing again under the same "
                        "key updates that memory instead of adding one.")] = None,
        importance: Annotated[float, Field(
            ge=0.0, le=1.0, description="0 (trivial) to 1 (critical); ranks recall.")] = 0.5,
        ttl: Annotated[float | None, Field(
            gt=0, description="Forget it after this many seconds (default: the level's "
                              "policy).")] = None,
        ttl_seconds: Annotated[float | None, Field(
            gt=0, description="Deprecated name of ttl.")] = None,
    ) -> Annotated[CallToolResult, Remembered]:
        """Store something worth knowing later: a fact, decision, event, preference or
        procedure, in your memory (or a team's). Returns its id (for forget) and the scope
        it went to. Store each fact once; a key updates the memory stored under it."""
        async with _refusals(ctx):
            caller = await caller_of(ctx)
            ttl = logged_alias(ttl, ttl_seconds, "ttl_seconds", "mcp")
            e = await caller.memory.store(content, level, tags=tags, team=team, key=key,
                                          importance=importance, ttl=ttl)
        return answer(Remembered(id=e.id, scope=e.scope, version=e.version))

    @tool(mcp, "Recall", read_only_hint=True)
    async def recall(
        ctx: Context,
        query: Annotated[str | None, Field(
            description="What to look for, in natural language (ranked by meaning and "
                        "keywords). Omit to list by the filters alone.")] = None,
        levels: Annotated[list[LevelName] | None, Field(
            description="Only these memory levels (default: all).")] = None,
        tags_all: Annotated[list[str], Field(
            description="Only memories carrying every one of these tags.")] = [],  # noqa: B006
        tags_any: Annotated[list[str], Field(
            description="Only memories carrying at least one of these tags.")] = [],  # noqa: B006
        tags_none: Annotated[list[str], Field(
            description="Leave out memories carrying any of these tags.")] = [],  # noqa: B006
        after: Annotated[datetime | None, Field(
            description="Only memories stored at or after this time (ISO 8601; UTC if "
                        "no offset).")] = None,
        before: Annotated[datetime | None, Field(
            description="Only memories stored at or before this time (ISO 8601).")] = None,
        scopes: Annotated[list[str] | None, Field(
            description="Only these scopes (ids as memory_map shows them).")] = None,
        lens: Annotated[str | None, Field(
            description="A named preset that fills what you leave unset: "
                        + ", ".join(known_lenses())
                        + " ('facts_about:<subject>').")] = None,
        max_results: Annotated[int | None, Field(
            ge=1, le=100, description="At most this many (default 10).")] = None,
        limit: Annotated[int | None, Field(
            ge=1, le=100, description="Deprecated name of max_results.")] = None,
        explain: Annotated[bool, Field(
            description="Add each memory's score components (relevance, strength, "
                        "recency, importance).")] = False,
        as_of: Annotated[datetime | None, Field(
            description="Answer with what was believed at this time (ISO 8601, not in "
                        "the future; UTC if no offset): each belief as it stood then, "
                        "other memories stored by then.")] = None,
        include_history: Annotated[bool, Field(
            description="Also return the beliefs that were replaced (superseded or "
                        "invalidated), each after the current one.")] = False,
        collapse: Annotated[bool, Field(
            strict=True,
            description="Each fact once (default): a memory and its copies, summaries and "
                        "beliefs come back as one, the others in also_in. false: every "
                        "form.")] = True,
        goal: Annotated[str | None, Field(
            min_length=1, max_length=2000,
            description="What you are working toward: memories that also serve it rank "
                        "higher (the query still decides).")] = None,
        intent: Annotated[Intent, Field(
            description="answer (default): by meaning and keywords; locate: exact words "
                        "first (a name, an id, an error); explore: the table of contents "
                        "by time; time_boxed: the best route within timeout_ms, then "
                        "stop.")] = "answer",
        timeout_ms: Annotated[int | None, Field(
            ge=1, le=MAX_TIMEOUT_MS, description="Return by then with what was found "
                                                 "(marked partial).")] = None,
        budget_tokens: Annotated[int | None, Field(
            ge=1, le=MAX_BUDGET_TOKENS, description="At most this many tokens of memory "
                                                    "text (best first; marked partial).")
        ] = None,
    ) -> Annotated[CallToolResult, Recalled]:
        """Look something up before you answer or act: memories by meaning and keywords
        when a query is given, narrowed by levels, tags, time and scopes. Returns the
        memories best first, each fact once (its other copies as ids in also_in), with
        id, scope, content, tags, time, author and a score from 0 to 1."""
        async with _refusals(ctx):
            caller = await caller_of(ctx)
            n = logged_alias(max_results, limit, "limit", "mcp") or 10
            start, end = _ms(after), _ms(before)
            time_range = None
            if start is not None or end is not None:
                time_range = (start if start is not None else 0,
                              end if end is not None else 2**62)
            q: dict[str, Any] = {
                "query": query, "levels": levels, "scopes": scopes, "lens": lens,
                "time_range": time_range, "explain": explain, "as_of": as_of,
                "include_history": include_history,
                "collapse": collapse,
                "context": {"goal": goal} if goal is not None else None,
                "intent": intent, "timeout_ms": timeout_ms, "budget_tokens": budget_tokens,
                "tag_filter": TagFilter(all_of=frozenset(tags_all),
                                        any_of=frozenset(tags_any),
                                        none_of=frozenset(tags_none)),
            }
            mq = MemoryQuery.model_validate(
                {k: v for k, v in q.items() if v is not None} | {"max_results": n})
            hits = await caller.memory.recall(mq, max_results=n, explain=explain)
        return answer(Recalled.of(RecallResponse.of(hits), explain))

    @tool(mcp, "Forget", destructive_hint=True, idempotent_hint=True)
    async def forget(
        ctx: Context,
        id: Annotated[str, Field(min_length=1, description="The memory's id (from "
                                                         "remember or recall).")],
        scope: Annotated[str | None, Field(
            description="Its scope, if known (faster; otherwise every scope you may "
                        "write is searched).")] = None,
    ) -> Annotated[CallToolResult, Forgotten]:
        """Delete a memory of yours (or your team's) that is wrong or no longer wanted, by
        the id remember or recall gave. Returns whether it was deleted. To fix a belief,
        use correct instead: it keeps the evidence."""
        async with _refusals(ctx):
            caller = await caller_of(ctx)
            done = await caller.memory.forget(id, scope=scope)
        return answer(Forgotten(id=id, forgotten=done))

    @tool(mcp, "List tags", read_only_hint=True)
    async def list_tags(
        ctx: Context,
        level: Annotated[LevelName | None, Field(
            description="One level (default: all of your own levels).")] = None,
        team: Annotated[str | None, Field(
            description="A team's memory instead of your own (with no level: the team's "
                        "shared root).")] = None,
    ) -> Annotated[CallToolResult, TagsOut]:
        """See which tags are in use before filtering recall by tags. Returns each tag
        with the number of memories carrying it."""
        async with _refusals(ctx):
            caller = await caller_of(ctx)
            return answer(TagsOut(tags=await caller.memory.list_tags(level, team=team)))

    @tool(mcp, "Memory map", read_only_hint=True)
    async def memory_map(
        ctx: Context,
        detail: Annotated[bool, Field(
            description="The full map: each scope's level, limits and writability, each "
                        "edge's id and pattern (several times longer).")] = False,
    ) -> CallToolResult:
        """See where your memories are and where they flow: the scopes you can read
        (your levels, your teams', the collective one) with their sizes, and the
        dataflow edges that consolidate memories from one scope into another. Returns one
        line per scope ('<scope> <entries>') and per edge ('<source> -> <target>
        (<transformer>, <n> pending)'); detail=true gives the full records."""
        async with _refusals(ctx):
            caller = await caller_of(ctx)
            m = await caller_map(caller, _service(ctx))
        return answer(m if detail else map_summary(m))

    add_belief_tools(mcp, caller_of, _refusals)  # confirm, correct
    add_context_tool(mcp, caller_of, _refusals)
    add_feedback_tool(mcp, caller_of, _refusals)
    add_timeline_tools(mcp, caller_of, _refusals)  # timeline, expand
    return mcp


# -- streamable HTTP inside the gateway --------------------------------------------------


def _service(ctx: Context) -> Blackboard | None:
    """The gateway's service connection (reads the edges an agent's user may not), None
    over stdio."""
    request = ctx.request_context.request
    state = getattr(getattr(request, "app", None), "state", None)
    svc = getattr(state, "service", None)
    return svc if isinstance(svc, Blackboard) else None


async def _http_caller(ctx: Context) -> Caller:
    request = ctx.request_context.request
    if not isinstance(request, Request):
        raise ToolError("unauthorized: no HTTP request to take a bearer token from")
    caller: Caller = await request.app.state.callers.resolve(bearer(request))
    return caller


class _Authenticated:
    """Before the MCP transport sees a request: refuse it if its token does not log in
    (401) or is over its rate limit (429, the same bucket as REST), with the REST error
    body; a tool then finds the caller in the pool cache."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        try:
            await authorized(request)
        except Exception as exc:
            await error_response(exc)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def mount_mcp(routes: list[BaseRoute], *, local_only: bool = False
              ) -> Callable[[], contextlib.AbstractAsyncContextManager[None]]:
    """Add the MCP endpoint (:data:`MCP_PATH`) to ``routes`` (a FastAPI app's
    ``app.router.routes``) and return the context manager the app's lifespan must enter
    (it runs the SDK's session manager). The app must set ``app.state.callers``
    (:class:`~gateway.caller.Callers`); ``app.state.metrics``, if set, counts refusals.

    Stateless, JSON responses: any gateway process can answer any call (no session held
    in a process, so processes behind a load balancer need no stickiness).
    ``local_only`` (an ``--insecure-local`` gateway, no tokens): refuse Host and Origin
    headers other than localhost's, so a web page cannot reach it by DNS rebinding.
    """
    mcp = build_mcp(_http_caller)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=local_only,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
    sub = mcp.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=True,
                                  json_response=True, transport_security=security)
    for r in sub.routes:
        if isinstance(r, Route) and r.path == MCP_PATH:
            routes.append(Route(MCP_PATH, endpoint=_Authenticated(r.app)))

    @contextlib.asynccontextmanager
    async def running() -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            yield

    return running


def mount(app: FastAPI) -> contextlib.AbstractAsyncContextManager[None]:
    """:func:`gateway.app.create_app`'s hook: MCP at :data:`MCP_PATH` of ``app``."""
    return mount_mcp(app.router.routes, local_only=app.state.settings.insecure_local)()
