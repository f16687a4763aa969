"""``blackboard gateway`` and ``blackboard token create|list|revoke`` (``blackboard mcp``:
:mod:`cli.mcp`). Registered on the ``blackboard`` command by :func:`register`; nothing here
needs the ``[gateway]`` extra until ``gateway`` runs."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar

import typer

from .options import Json, WaitAof, WaitReplicas, apply_durability

__all__ = ["EXTRA_HINT", "register"]

EXTRA_HINT = "pip install 'reactive-blackboard[gateway]'"
T = TypeVar("T")

RedisUrl = Annotated[str | None, typer.Option(
    "--redis-url", envvar="BLACKBOARD_REDIS_URL",
    help="Admin Redis URL (a user holding @admin, e.g. default).")]

token_app = typer.Typer(help="Bearer tokens of the gateway (needs an admin Redis user).",
                        no_args_is_help=True)


def _admin(url: str | None, fn: Callable[[Any], Awaitable[T]]) -> T:
    from blackboard import Blackboard

    from .errors import fail, usage

    if not url:
        usage("no Redis URL: pass --redis-url or set BLACKBOARD_REDIS_URL")

    async def go() -> T:
        async with Blackboard.connect(url) as bb:
            return await fn(bb)

    try:
        return asyncio.run(go())
    except typer.Exit:
        raise
    except Exception as exc:
        fail(exc)


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


@token_app.command("create")
def create(
    agent: Annotated[str, typer.Option("--agent", help="The agent the token acts as.")],
    team: Annotated[list[str] | None, typer.Option(
        "--team", help="A team of the agent (repeat). Sets the agent's teams for all its "
                       "tokens; none given: keep its current teams.")] = None,
    operator: Annotated[bool, typer.Option(
        "--operator", help="An operator token: the service user, every scope visible "
                           "(map, stats, dashboard).")] = False,
    json_out: Json = False, redis_url: RedisUrl = None,
) -> None:
    """Issue a token (printed once; it carries the Redis credential of the agent's user).

    Refused while Redis's default user is open, like `acl grant`: a token's user
    confines nothing while any client can log in as default."""
    from rich.markup import escape

    from blackboard.acl import AclAdmin
    from blackboard.acl_check import DefaultUserOpen, require_default_closed
    from gateway.tokens import create_token

    from .errors import EXIT_PERMISSION
    from .output import console, err_console, print_json

    async def go(bb: Any) -> Any:
        try:
            await require_default_closed(AclAdmin(bb))
        except DefaultUserOpen as exc:
            return str(exc)
        return await create_token(bb, agent, team or None, operator=operator)

    got = _admin(redis_url, go)
    if isinstance(got, str):  # the same line as `acl grant`'s
        err_console.print(f"[red]error:[/] {escape(got)}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_PERMISSION)
    rec, token = got
    if json_out:
        print_json({"id": rec.id, "token": token, "agent": rec.agent,
                    "teams": list(rec.teams), "operator": rec.operator, "user": rec.user})
        return
    console.print(f"token {rec.id} for agent {rec.agent} (user {rec.user}"
                  f"{', operator' if rec.operator else ''}); shown once:", highlight=False)
    print(token)


@token_app.command("list")
def list_(json_out: Json = False, redis_url: RedisUrl = None) -> None:
    """Every token: id, agent, teams, user, created (never the secret)."""
    from rich.table import Table

    from gateway.tokens import list_tokens

    from .output import console, print_json

    recs = _admin(redis_url, list_tokens)
    if json_out:
        print_json([{k: v for k, v in r.to_json().items() if k != "sha256"} for r in recs])
        return
    t = Table("id", "agent", "teams", "user", "created")
    for r in recs:
        t.add_row(r.id, r.agent, ",".join(r.teams) or "-", r.user, _when(r.created))
    console.print(t)


@token_app.command("revoke")
def revoke(token_id: Annotated[str, typer.Argument(help="The token's id (`token list`).")],
           json_out: Json = False, redis_url: RedisUrl = None) -> None:
    """Remove the token's password from its Redis user and disconnect the user's clients:
    the token is refused from its next request on, the agent's other tokens keep working."""
    from gateway.tokens import revoke_token

    from .output import console, print_json

    rec = _admin(redis_url, lambda bb: revoke_token(bb, token_id))
    if json_out:
        print_json({"id": rec.id, "agent": rec.agent, "user": rec.user, "revoked": True})
        return
    console.print(f"revoked token {rec.id} of agent {rec.agent}", highlight=False)


def gateway(
    host: Annotated[str | None, typer.Option(help="Bind address (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default 8080).")] = None,
    workers: Annotated[int, typer.Option(help="Processes on this port.")] = 1,
    insecure_local: Annotated[bool, typer.Option(
        "--insecure-local", help="No tokens: every caller is the local operator. Only "
                                 "bound to 127.0.0.1.")] = False,
    redis_url: Annotated[str | None, typer.Option(
        "--redis-url", envvar="BLACKBOARD_REDIS_URL",
        help="Redis URL of the memory (no credentials needed: tokens carry them).")] = None,
    wait_replicas: WaitReplicas = None,
    wait_aof: WaitAof = False,
    json_out: Json = False,
) -> None:
    """Serve memory over HTTP: REST, MCP, the dashboard, /metrics.

    REST under /v1, MCP at /mcp, the dashboard at /, the API docs at /docs, metrics at
    /metrics. Says where once it listens (--json: one JSON object)."""
    from .errors import fail, usage

    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        usage(f"the gateway needs its extra ({exc.name} is missing): {EXTRA_HINT}")
    from blackboard import InvalidArgument
    from gateway.server import serve
    from gateway.settings import GatewaySettings

    apply_durability(wait_replicas, wait_aof)
    try:
        s = GatewaySettings.from_env(host=host, port=port, redis_url=redis_url,
                                     insecure_local=insecure_local or None)
    except InvalidArgument as exc:
        usage(str(exc))
    def ready() -> None:
        from .output import console, print_json

        url = f"http://{s.host}:{s.port}"
        info = {"url": url, "rest": f"{url}/v1", "mcp": f"{url}/mcp", "dashboard": f"{url}/",
                "docs": f"{url}/docs", "metrics": f"{url}/metrics", "pid": os.getpid(),
                "workers": workers, "auth": "off (insecure-local)" if s.insecure_local
                else "bearer tokens"}
        if json_out:
            print_json(info)
        else:
            console.print(f"ready: gateway on [bold]{url}[/] (REST /v1, MCP /mcp, dashboard "
                          f"/, docs /docs; auth: {info['auth']}); Ctrl-C to stop",
                          highlight=False, soft_wrap=True)

    try:
        serve(s, workers=workers, on_ready=ready)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except Exception as exc:
        fail(exc)


def register(app: typer.Typer) -> None:
    """Add ``gateway`` and ``token`` to the ``blackboard`` command."""
    app.command("gateway")(gateway)
    app.add_typer(token_app, name="token")
