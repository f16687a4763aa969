"""The ``blackboard`` command: server, demo, tail, stats, sweep, trim (and more as they land).

Every command takes ``--redis-url`` (default ``$BLACKBOARD_REDIS_URL``); commands that print
data take ``--json`` for programs.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Annotated

import typer
from rich.table import Table

from blackboard import Blackboard, BlackboardError
from blackboard.server import RedisServer

from .heartbeat import list_workers
from .output import console, err_console, print_json
from .stats import collect_stats

app = typer.Typer(
    name="blackboard",
    help="Reactive Blackboard: shared, reactive memory for LLM agents on Redis.",
    no_args_is_help=True,
    add_completion=False,
)

RedisUrl = Annotated[
    str | None,
    typer.Option("--redis-url", envvar="BLACKBOARD_REDIS_URL", help="Redis URL (redis://...)."),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON for programs.")]


def _need_url(url: str | None) -> str:
    if not url:
        err_console.print(
            "[red]no Redis URL[/]: pass --redis-url or set BLACKBOARD_REDIS_URL "
            "(`blackboard server` starts one)"
        )
        raise typer.Exit(2)
    return url


def _run(coro: object) -> None:
    try:
        asyncio.run(coro)  # type: ignore[arg-type]
    except BlackboardError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        raise typer.Exit(130) from None


@app.command()
def server(
    port: Annotated[int, typer.Option(help="Port (0 = a free one).")] = 6379,
    data_dir: Annotated[str, typer.Option(help="Directory for the AOF.")] = ".data/redis",
    appendfsync: Annotated[
        str, typer.Option(help="everysec (default) or always (fsync every write).")
    ] = "everysec",
    json_out: Json = False,
) -> None:
    """Run a private redis-server in the foreground (AOF on); Ctrl-C stops it cleanly."""
    srv = RedisServer(port or None, data_dir, appendfsync=appendfsync)
    try:
        srv.start()
    except BlackboardError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(1) from None

    def _forward(signum: int, frame: object) -> None:
        # Only forward: redis-server flushes its AOF and exits, and join() below returns.
        if srv.proc is not None and srv.proc.poll() is None:
            srv.proc.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, _forward)
    signal.signal(signal.SIGINT, _forward)
    info = {
        "url": srv.url,
        "data_dir": str(srv.data_dir),
        "binary": srv.binary,
        "version": ".".join(map(str, srv.version)),
        "pid": srv.proc.pid if srv.proc else None,
    }
    if json_out:
        print_json(info)
    else:
        console.print(
            f"redis-server {info['version']} on [bold]{srv.url}[/] "
            f"(AOF in {srv.data_dir}, appendfsync {appendfsync}); Ctrl-C to stop"
        )
    code = srv.join()
    srv.stop()
    if not json_out:
        console.print("redis-server stopped")
    raise typer.Exit(0 if code in (0, -signal.SIGTERM) else code)


@app.command()
def tail(
    scope: Annotated[str, typer.Argument(help="Scope id, e.g. agent:a1:working.")],
    redis_url: RedisUrl = None,
    since: Annotated[str | None, typer.Option(help="Feed id to start after; '0' = all.")] = None,
    limit: Annotated[int, typer.Option(help="Stop after this many events (0 = follow).")] = 0,
    json_out: Json = False,
) -> None:
    """Follow a scope's events."""
    url = _need_url(redis_url)

    async def main() -> None:
        async with Blackboard.connect(url) as bb:
            n = 0
            async for ev in bb.scope(scope).feed(since):
                if json_out:
                    print_json(ev)
                else:
                    console.print(
                        f"[dim]{ev.id}[/] [bold]{ev.type}[/] {ev.entry_id} "
                        f"v{ev.version} {', '.join(sorted(ev.tags))}"
                    )
                n += 1
                if limit and n >= limit:
                    return

    _run(main())


@app.command()
def stats(redis_url: RedisUrl = None, json_out: Json = False) -> None:
    """Buses, consumer groups (lag, pending) and DLQ sizes per partition."""
    url = _need_url(redis_url)

    async def main() -> None:
        async with Blackboard.connect(url) as bb:
            st = await collect_stats(bb)
            workers = await list_workers(bb)
        if json_out:
            print_json(
                {
                    "partitions": st.partitions,
                    "totals": st.totals(),
                    "buses": st.buses,
                    "workers": workers,
                }
            )
            return
        w = Table(title=f"{len(workers)} live workers")
        for col in ("worker", "role", "pid", "partitions", "events", "written", "dlq"):
            w.add_column(col)
        for info in workers:
            c = info.counters
            w.add_row(
                info.id,
                info.role,
                str(info.pid),
                ",".join(map(str, info.partitions)),
                str(c.get("events", 0)),
                str(c.get("written", 0)),
                str(c.get("dead_lettered", 0)),
            )
        console.print(w)
        t = Table(title=f"{st.partitions} partitions")
        for col in ("partition", "bus", "dlq", "scopes", "group", "consumers", "pending", "lag"):
            t.add_column(col, justify="right" if col != "group" else "left")
        for b in st.buses:
            if not b.groups:
                t.add_row(
                    str(b.partition), str(b.length), str(b.dlq), str(b.scopes), "-", "", "", ""
                )
            for i, g in enumerate(b.groups):
                head = (
                    (str(b.partition), str(b.length), str(b.dlq), str(b.scopes))
                    if i == 0
                    else ("",) * 4
                )
                t.add_row(
                    *head,
                    g.role,
                    str(g.consumers),
                    str(g.pending),
                    "?" if g.lag is None else str(g.lag),
                )
        console.print(t)
        console.print(st.totals())

    _run(main())


@app.command()
def sweep(
    redis_url: RedisUrl = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report only.")] = False,
    json_out: Json = False,
) -> None:
    """Remove expired entries now (workers also do this on a schedule)."""
    url = _need_url(redis_url)

    async def main() -> None:
        async with Blackboard.connect(url) as bb:
            rep = await bb.sweep(dry_run=dry_run)
        if json_out:
            print_json(rep)
        else:
            verb = "would expire" if dry_run else "expired"
            console.print(f"{verb} {rep.total} entries in {len(rep.expired)} scopes")

    _run(main())


@app.command()
def trim(
    redis_url: RedisUrl = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report only.")] = False,
    json_out: Json = False,
) -> None:
    """Trim partition buses behind their slowest consumer group."""
    url = _need_url(redis_url)

    async def main() -> None:
        async with Blackboard.connect(url) as bb:
            rep = await bb.trim(dry_run=dry_run)
        if json_out:
            print_json(rep)
        else:
            console.print(f"{'would trim' if dry_run else 'trimmed'} {rep.total} events")

    _run(main())


@app.command()
def worker(
    role: Annotated[
        str, typer.Option(help="summarize|episodic|semantic|procedural|team|index|maintenance|all")
    ],
    redis_url: RedisUrl = None,
    concurrency: Annotated[int, typer.Option(help="Worker processes to run.")] = 1,
    metrics_port: Annotated[
        int | None, typer.Option(help="Serve Prometheus metrics on this port.")
    ] = None,
) -> None:
    """Run consolidation / maintenance workers as OS processes until SIGTERM."""
    from .settings import ROLES, WorkerSettings
    from .supervisor import run_processes
    from .worker import run_worker

    url = _need_url(redis_url)
    if role != "all" and role not in ROLES:
        err_console.print(f"[red]unknown role {role!r}[/]; roles: {', '.join(ROLES)}, all")
        raise typer.Exit(2)
    settings = WorkerSettings.from_env(metrics_port=metrics_port)
    if concurrency > 1:
        raise typer.Exit(run_processes(url, role, concurrency, metrics_port))
    try:
        code = run_worker(url, role, settings)
    except BlackboardError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(1) from None
    raise typer.Exit(code)


@app.command("map")
def map_(
    agent: Annotated[str, typer.Option("--agent", help="Agent whose view is shown.")],
    team: Annotated[
        list[str] | None, typer.Option("--team", help="Team of the agent (repeatable).")
    ] = None,
    redis_url: RedisUrl = None,
    json_out: Json = False,
) -> None:
    """The scopes an agent can see, their configs and counts, and the edges between them."""
    from memory import AgentMemory
    from memory.render import render_map

    url = _need_url(redis_url)

    async def main() -> None:
        async with Blackboard.connect(url) as bb, AgentMemory(bb, agent, teams=team or []) as mem:
            m = await mem.memory_map()
        if json_out:
            print_json(m.to_dict())
        else:
            console.print(render_map(m))

    _run(main())


@app.command()
def demo(
    redis_url: RedisUrl = None,
    agents: Annotated[int, typer.Option(help="Simulated agents.")] = 3,
    steps: Annotated[int, typer.Option(help="Steps per agent.")] = 120,
    workers: Annotated[
        bool, typer.Option(help="Start worker processes (off when they run elsewhere).")
    ] = True,
    json_out: Json = False,
) -> None:
    """Simulated agents write and watch memory on an embedded (or given) Redis."""
    from .demo import run_demo

    try:
        code = run_demo(redis_url, agents=agents, steps=steps, workers=workers, json_out=json_out)
    except BlackboardError as exc:
        err_console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(1) from None
    raise typer.Exit(code)


from .cli_recall import register as _register_recall  # noqa: E402

_register_recall(app)

from .cli_admin import register as _register_admin  # noqa: E402

_register_admin(app)


def main() -> None:  # pragma: no cover - console entry
    app(prog_name="blackboard")
