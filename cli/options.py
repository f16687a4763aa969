"""What every ``blackboard`` command shares: its common options and how it runs.

The options are ``Annotated`` types; typer reads them from the annotation, so a command
module imports the names it uses (``from .options import Json, RedisUrl``) and every
command spells ``--redis-url`` / ``--json`` the same way.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Coroutine
from typing import Annotated, Any, TypeVar

import typer

from blackboard import Blackboard
from blackboard.settings import ENV_PREFIX
from memory.aliases import ALIASES, cli_flag, deprecation_note

from .errors import fail, usage

__all__ = [
    "DryRun", "Json", "JsonLines", "MaxResults", "MaxResultsOld", "RedisUrl", "WaitAof",
    "WaitReplicas", "apply_durability", "canonical_option", "need_url", "run",
    "with_blackboard",
]

T = TypeVar("T")

RedisUrl = Annotated[
    str | None,
    typer.Option("--redis-url", envvar="BLACKBOARD_REDIS_URL", help="Redis URL (redis://...)."),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON for programs.")]
#: ``--json`` of a command that prints a stream of documents (``tail``).
JsonLines = Annotated[bool, typer.Option("--json", help="Print JSON for programs (one per line).")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Report only.")]
#: The commands that write (worker, gateway, demo): durability="replicated".
WaitReplicas = Annotated[int | None, typer.Option(
    "--wait-replicas", min=0,
    help="Acknowledge a write once N replicas have it (WAIT); a write short of them "
         "fails with NotReplicated (it stays on the master).")]
WaitAof = Annotated[bool, typer.Option(
    "--wait-aof", help="Acknowledge a write once it is fsynced to the AOF, and to the "
                       "--wait-replicas replicas' (WAITAOF, Redis >= 7.2).")]

#: How many hits at most (``MemoryQuery.max_results``); its old flag stays accepted but
#: hidden (``--limit``, from :data:`memory.aliases.ALIASES`), see :func:`canonical_option`.
MaxResults = Annotated[int | None, typer.Option(
    cli_flag("max_results"), min=1, help="Most hits shown (default 10).")]
MaxResultsOld = Annotated[int | None, typer.Option(
    *map(cli_flag, ALIASES["max_results"]), min=1, hidden=True)]


def canonical_option(value: T | None, old_value: T | None, canonical: str,
                     command: str) -> T | None:
    """The value of an option given by its canonical flag or by its deprecated one (a
    one-line note on stderr, once); both is a usage error (exit 2)."""
    if old_value is None:
        return value
    olds = ALIASES[canonical]
    if value is not None:
        usage(f"give {cli_flag(canonical)} only ({'/'.join(map(cli_flag, olds))} is its "
              "deprecated name)")
    # typer cannot say which hidden flag was typed; a concept has one old flag so far
    note = deprecation_note(olds[0], f"blackboard {command}", flags=True)
    if note is not None:
        from .output import err_console

        err_console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    return old_value


def apply_durability(wait_replicas: int | None, wait_aof: bool) -> None:
    """Put ``--wait-replicas`` / ``--wait-aof`` in the environment, where every client of
    this process and of the processes it starts reads its settings
    (``BLACKBOARD_WAIT_REPLICAS``, ``BLACKBOARD_WAIT_AOF``)."""
    if wait_replicas is not None:
        os.environ[f"{ENV_PREFIX}WAIT_REPLICAS"] = str(wait_replicas)
    if wait_aof:
        os.environ[f"{ENV_PREFIX}WAIT_AOF"] = "1"


def need_url(url: str | None) -> str:
    """``url``, or exit 2 naming the option and the variable that give one."""
    if not url:
        usage("no Redis URL: pass --redis-url or set BLACKBOARD_REDIS_URL "
              "(`blackboard server` starts one)")
    return url


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a command's coroutine: Ctrl-C exits 130, a failure is one line (:func:`fail`)."""
    try:
        return asyncio.run(coro)
    except typer.Exit:  # the command chose its exit code
        raise
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except Exception as exc:
        fail(exc)


def with_blackboard(url: str | None, fn: Callable[[Blackboard], Awaitable[T]]) -> T:
    """``fn(bb)`` on a :class:`Blackboard` connected to ``url`` (see :func:`need_url`,
    :func:`run`)."""
    checked = need_url(url)

    async def go() -> T:
        async with Blackboard.connect(checked) as bb:
            return await fn(bb)

    return run(go())
