"""``blackboard mcp``: the memory tools over stdio, for desktop MCP clients.

The client (Claude Desktop, Cursor...) starts this command and speaks MCP on its stdin and
stdout; the tools run as the agent of ``BLACKBOARD_TOKEN`` (``blackboard token create``),
on a Redis connection logged in as that token's user, exactly as ``/mcp`` of a gateway
does. Nothing but the protocol goes to stdout; a refused token is one line on stderr
before the server starts.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context

    from gateway.caller import Caller

__all__ = ["register", "serve_stdio"]


async def serve_stdio(token: str, redis_url: str | None) -> None:
    """Serve the memory tools on stdin/stdout as the caller of ``token``."""
    from gateway.caller import Callers
    from gateway.mcp_server import build_mcp
    from gateway.settings import GatewaySettings

    callers = Callers(GatewaySettings.from_env(redis_url=redis_url))
    try:
        await callers.resolve(token)  # a refused token fails now, not at the first call

        async def caller_of(_: Context) -> Caller:
            return await callers.resolve(token)

        await build_mcp(caller_of).run_stdio_async()
    finally:
        await callers.aclose()


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp(
        token: Annotated[str | None, typer.Option(
            "--token", envvar="BLACKBOARD_TOKEN", show_default=False,
            help="The agent's token (`blackboard token create`); prefer the environment "
                 "variable, argv is visible to every user.")] = None,
        redis_url: Annotated[str | None, typer.Option(
            "--redis-url", envvar="BLACKBOARD_REDIS_URL",
            help="Redis URL (redis://...), without credentials: the token carries them.")
        ] = None,
        json_out: Annotated[bool, typer.Option(
            "--json", help="Errors on stderr as one JSON object {error, detail, exit}, for "
                           "the program that launched it (stdout is the MCP stream).")
        ] = False,
    ) -> None:
        """Serve the memory tools over MCP on stdio (for Claude Desktop, Cursor...)."""
        from .errors import fail, usage

        if not token:
            usage("no token: set BLACKBOARD_TOKEN (or pass --token); "
                  "`blackboard token create --agent A` makes one", as_json=json_out)
        try:
            import mcp as _  # noqa: F401
        except ImportError:
            usage("`blackboard mcp` needs the gateway extra: "
                  "pip install 'reactive-blackboard[gateway]'", as_json=json_out)
        try:
            asyncio.run(serve_stdio(token, redis_url))
        except KeyboardInterrupt:
            raise typer.Exit(130) from None
        except Exception as exc:
            fail(exc, as_json=json_out)
