"""``blackboard tail SCOPE``: a scope's recent events, then (``--follow``) new ones; for
people each line ends with the entry's text (when it is still live).

Without ``--follow`` it prints what exists and exits, so it never waits on a question it
can answer; with it, it says on stderr what it waits for. A scope nobody ever wrote,
registered or fed is named as unknown (exit 1) rather than followed forever.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.markup import escape

from blackboard import Blackboard, Event, NotFound

from .options import JsonLines, RedisUrl
from .output import console, print_json

__all__ = ["register"]



async def scope_known(bb: Blackboard, scope_id: str) -> bool:
    """The scope has events, live entries or a registered config."""
    from memory.registry import Registry

    s = bb.scope(scope_id)
    if await s.last_event_id() != "0-0" or await s.count():
        return True
    reg = Registry(bb)
    try:
        return await reg.get_scope(scope_id) is not None
    finally:
        await reg.aclose()


async def recent_events(bb: Blackboard, scope_id: str, since: str | None,
                        limit: int) -> list[Event]:
    """Up to ``limit`` events after ``since`` (oldest first), or the newest ``limit``."""
    s = bb.scope(scope_id)
    if since is not None:
        start = "-" if since in ("0", "0-0") else f"({since}"
        return await s.events(start, "+", count=limit)
    return await s.newest_events(limit)


async def texts_of(bb: Blackboard, scope: str, evs: list[Event]) -> dict[str, str]:
    """Entry id -> the text of its live entry (deleted or expired ones have none)."""
    ids = sorted({ev.entry_id for ev in evs})
    got = await bb.scope(scope).get_many(ids) if ids else []
    return {i: e.text for i, e in zip(ids, got, strict=True) if e is not None}


async def _follow(bb: Blackboard, scope: str, last: str | None,
                  show: Callable[[Event, str | None], None], with_text: bool) -> None:
    async for ev in bb.scope(scope).feed(last):
        text = (await texts_of(bb, scope, [ev])).get(ev.entry_id) if with_text else None
        show(ev, text)


async def until_signal(work: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` until it ends or SIGINT/SIGTERM arrives. A signal stops the wait at
    once: asyncio.run's own Ctrl-C handling only cancels the task, and a cancel that lands
    while redis-py finishes a blocking read can be lost (seen on 3.11), leaving the
    command running after Ctrl-C."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    task = asyncio.ensure_future(work)
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        stopper.cancel()
        task.cancel()
        await asyncio.wait({task}, timeout=2)
    if task.done() and not task.cancelled() and task.exception() is not None:
        raise task.exception()  # type: ignore[misc]


def _line(ev: Event, text: str | None) -> str:
    at = datetime.fromtimestamp(ev.at / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
    tags = " " + escape(f"[{', '.join(sorted(ev.tags))}]") if ev.tags else ""
    body = f" {escape(text)}" if text else ""
    return f"[dim]{at} {ev.entry_id}[/] [bold]{ev.type}[/] v{ev.version}{tags}{body}"


def register(app: typer.Typer) -> None:
    """Add the ``tail`` command to ``app``."""
    from .app import waiting
    from .options import need_url as _need_url
    from .options import run as _run

    @app.command()
    def tail(
        scope: Annotated[str, typer.Argument(help="Scope id, e.g. agent:a1:working.")],
        redis_url: RedisUrl = None,
        since: Annotated[
            str | None, typer.Option(help="Feed id to start after; '0' = from the oldest.")
        ] = None,
        limit: Annotated[int, typer.Option(help="Most events printed (the newest ones, "
                                           "or the first after --since).")] = 10,
        follow: Annotated[
            bool, typer.Option("--follow", "-f", help="Then wait for new events (Ctrl-C stops).")
        ] = False,
        json_out: JsonLines = False,
    ) -> None:
        """A scope's recent events (JSON: one object per line); --follow for new ones."""
        url = _need_url(redis_url)
        if limit < 1:
            from .errors import usage

            usage(f"--limit must be at least 1 (got {limit})")

        def show(ev: Event, text: str | None) -> None:
            if json_out:
                print_json(ev)
            else:
                console.print(_line(ev, text), highlight=False)

        async def main() -> None:
            async with Blackboard.connect(url) as bb:
                if not await scope_known(bb, scope):
                    raise NotFound(
                        f"unknown scope {scope!r}: it has no events, entries or registered "
                        "config (`blackboard map --agent A` lists an agent's scopes)")
                evs = await recent_events(bb, scope, since, limit)
                texts = {} if json_out else await texts_of(bb, scope, evs)
                for ev in evs:
                    show(ev, texts.get(ev.entry_id))
                if not follow:
                    if not evs and not json_out:
                        console.print(f"no events in {scope}"
                                      + (f" after {since}" if since else ""))
                    return
                last = evs[-1].id if evs else since
                waiting(f"following {scope} for new events; Ctrl-C to stop")
                await until_signal(_follow(bb, scope, last, show, not json_out))

        _run(main())
