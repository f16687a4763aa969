"""The ``blackboard`` command. This module defines ``server``, ``sweep``, ``trim``,
``worker``, ``map`` and ``demo``; :func:`_mount` adds the commands of the package's other
modules (``recall``, ``tail``, ``stats``, ``check``, ``acl ...``, ``quota ...``,
``belief ...``, ``transfer``, ``timeline``) and of the gateway
(``gateway``, ``token ...``: :mod:`cli.gateway`; ``mcp``: :mod:`cli.mcp`).
``blackboard --help`` lists them all.

Every command takes ``--redis-url`` (default ``$BLACKBOARD_REDIS_URL``); commands that print
data take ``--json`` for programs. A mistake prints one line on stderr and exits with the
code documented in :mod:`cli.errors`; ``--debug`` (or ``BLACKBOARD_DEBUG=1``) shows
the traceback instead. URLs are printed with their password masked.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import typer

from blackboard import Blackboard, RedisServer
from blackboard.redact import mask_url
from blackboard.server import MAXMEMORY_RE

from .errors import fail, one_line_warnings, usage
from .options import (
    DryRun,
    Json,
    RedisUrl,
    WaitAof,
    WaitReplicas,
    apply_durability,
    with_blackboard,
)
from .options import need_url as _need_url
from .options import run as _run
from .output import console, err_console, print_json

app = typer.Typer(
    name="blackboard",
    help="Reactive Blackboard: shared, reactive memory for LLM agents on Redis.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals would print credentials under --debug
)

#: ``server --appendfsync`` values (redis.conf's).
APPENDFSYNC = ("always", "everysec", "no")
#: `blackboard server`'s memory limit unless told (README, "Memory pressure"): a runaway
#: writer then meets OutOfMemory instead of the machine's swap or OOM killer.
DEFAULT_MAXMEMORY = "1gb"


#: ``worker --role``'s help: written out, since importing workers.roles (ROLES) costs a
#: second on every ``blackboard`` start; tests/cli/test_cli_80col.py keeps it in step.
#: Spaces between the names, so a narrow terminal wraps the list instead of cutting it.
ROLE_HELP = ("One of: summarize, episodic, semantic, procedural, team, collective, timeline, "
             "index, maintenance; all: every role.")

#: The distribution whose version ``--version`` prints (pyproject's ``name``).
DISTRIBUTION = "reactive-blackboard"


def version_line() -> str:
    """``blackboard <version>``: the installed distribution's version, one line."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"blackboard {version(DISTRIBUTION)}"
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "blackboard (version unknown: the package is not installed)"


def _print_version(given: bool) -> None:
    if given:
        print(version_line())
        raise typer.Exit(0)


@app.callback()
def _options(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks (also BLACKBOARD_DEBUG=1).")
    ] = False,
    version: Annotated[bool, typer.Option(
        "--version", "-V", callback=_print_version, is_eager=True,
        help="Print the version and exit.")] = False,
) -> None:
    if debug:
        os.environ["BLACKBOARD_DEBUG"] = "1"  # inherited by the worker processes we start
    one_line_warnings()


def waiting(what: str) -> None:
    """Say on stderr what a command waits for (stdout stays the data)."""
    err_console.print(f"[dim]{what}[/]", highlight=False, soft_wrap=True)


@app.command()
def server(
    port: Annotated[int, typer.Option(help="Port (0 = a free one).")] = 6379,
    data_dir: Annotated[str, typer.Option(help="Directory for the AOF.")] = ".data/redis",
    appendfsync: Annotated[
        str, typer.Option(help="everysec (default) or always (fsync every write).")
    ] = "everysec",
    maxmemory: Annotated[str, typer.Option(
        help="Redis's memory limit (e.g. 1gb, 512mb; 0 = none); over it writes are refused."
    )] = DEFAULT_MAXMEMORY,
    json_out: Json = False,
) -> None:
    """Run a private redis-server in the foreground (AOF on); Ctrl-C stops it cleanly."""
    if appendfsync not in APPENDFSYNC:
        usage(f"--appendfsync {appendfsync!r} is not one of {', '.join(APPENDFSYNC)}")
    if not MAXMEMORY_RE.fullmatch(maxmemory):
        usage(f"--maxmemory {maxmemory!r} is not a size: bytes, or a number with kb, mb or gb "
              "(e.g. 1gb, 512mb; 0 for no limit)")
    try:
        srv = RedisServer(port or None, data_dir, appendfsync=appendfsync, maxmemory=maxmemory)
        srv.start()
    except Exception as exc:
        fail(exc)

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
        "maxmemory": maxmemory,
    }
    if json_out:
        print_json(info)
    else:
        console.print(
            f"ready: redis-server {info['version']} on [bold]{srv.url}[/] "
            f"(AOF in {srv.data_dir}, appendfsync {appendfsync}, maxmemory {maxmemory}); "
            "Ctrl-C to stop",
            highlight=False, soft_wrap=True,  # one line, also for a log reader
        )
    code = srv.join()
    srv.stop()
    if not json_out:
        console.print("redis-server stopped")
    raise typer.Exit(0 if code in (0, -signal.SIGTERM) else code)


def _report(url: str | None, json_out: bool, job: Callable[[Blackboard], Awaitable[Any]],
            line: Callable[[Any], str]) -> None:
    """Run one maintenance job now and print its report (JSON, or ``line(report)``)."""
    rep = with_blackboard(url, job)
    if json_out:
        print_json(rep)
    else:
        console.print(line(rep))


@app.command()
def sweep(redis_url: RedisUrl = None, dry_run: DryRun = False, json_out: Json = False) -> None:
    """Remove expired entries now (workers also do this on a schedule)."""
    _report(redis_url, json_out, lambda bb: bb.sweep(dry_run=dry_run),
            lambda rep: f"{'would expire' if dry_run else 'expired'} {rep.total} entries in "
                        f"{len(rep.expired)} scopes")


@app.command()
def trim(redis_url: RedisUrl = None, dry_run: DryRun = False, json_out: Json = False) -> None:
    """Trim partition buses behind their slowest consumer group."""
    _report(redis_url, json_out, lambda bb: bb.trim(dry_run=dry_run),
            lambda rep: f"{'would trim' if dry_run else 'trimmed'} {rep.total} events")


@app.command()
def worker(
    role: Annotated[str, typer.Option(help=ROLE_HELP)],
    redis_url: RedisUrl = None,
    concurrency: Annotated[int, typer.Option(help="Worker processes to run.")] = 1,
    metrics_port: Annotated[
        int | None, typer.Option(help="Serve Prometheus metrics on this port.")
    ] = None,
    wait_replicas: WaitReplicas = None,
    wait_aof: WaitAof = False,
    json_out: Json = False,
) -> None:
    """Run consolidation / maintenance workers as OS processes until SIGTERM."""
    from workers.process import run_worker
    from workers.roles import ROLES
    from workers.settings import WorkerSettings

    from .supervisor import run_processes

    url = _need_url(redis_url)
    if role != "all" and role not in ROLES:
        usage(f"unknown role {role!r}: use one of {', '.join(ROLES)}, all")
    if concurrency < 1:
        usage(f"--concurrency must be at least 1 (got {concurrency})")
    settings = WorkerSettings.from_env(metrics_port=metrics_port)
    apply_durability(wait_replicas, wait_aof)
    if concurrency > 1:
        # The port from the environment too: each process gets its own (port + i).
        raise typer.Exit(run_processes(url, role, concurrency, settings.metrics_port))

    def ready() -> None:
        info = {"ready": True, "role": role, "pid": os.getpid(), "redis": mask_url(url),
                "metrics_port": metrics_port}
        if json_out:
            print_json(info)
            return
        metrics = f", metrics on :{metrics_port}" if metrics_port else ""
        console.print(f"ready: worker {role} (pid {os.getpid()}) on {mask_url(url)}"
                      f"{metrics}; SIGTERM or Ctrl-C to stop", highlight=False, soft_wrap=True)

    try:
        code = run_worker(url, role, settings, ready=ready)
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:
        fail(exc)
    raise typer.Exit(code)


@app.command("map")
def map_(
    agent: Annotated[str, typer.Option("--agent", help="Agent whose view is shown.")],
    team: Annotated[list[str] | None, typer.Option(
        "--team", help="Also this team (repeatable); the agent's own teams are found in "
                       "its ACL grant and its dataflow edges.")] = None,
    redis_url: RedisUrl = None,
    json_out: Json = False,
) -> None:
    """The scopes an agent can see, their configs and counts, and the edges between them."""
    from memory import AgentMemory
    from memory.render import render_map
    from memory.teams import teams_of

    from .recall import require_agent

    url = _need_url(redis_url)

    async def main() -> None:
        async with Blackboard.connect(url) as bb:
            teams = {*await teams_of(bb, agent), *(team or [])}
            async with AgentMemory(bb, agent, teams=teams) as mem:
                m = await mem.memory_map()
        require_agent(m, agent)
        if json_out:
            print_json(m.to_dict())
        else:
            console.print(render_map(m))

    _run(main())


@app.command()
def demo(
    redis_url: RedisUrl = None,
    agents: Annotated[int, typer.Option(help="Simulated agents (1 or more).")] = 3,
    steps: Annotated[int, typer.Option(help="Steps per agent (1 or more).")] = 120,
    workers: Annotated[
        bool, typer.Option(help="Start worker processes (off when they run elsewhere).")
    ] = True,
    wait_replicas: WaitReplicas = None,
    wait_aof: WaitAof = False,
    json_out: Json = False,
) -> None:
    """Simulated agents write and watch memory on an embedded (or given) Redis."""
    from .demo import run_demo

    apply_durability(wait_replicas, wait_aof)
    if agents < 1 or steps < 1:
        usage(f"--agents and --steps must be at least 1 (got {agents} and {steps})")
    try:
        code = run_demo(redis_url, agents=agents, steps=steps, workers=workers, json_out=json_out)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except Exception as exc:
        fail(exc)
    raise typer.Exit(code)


def _mount() -> None:
    from .admin import register as register_admin
    from .belief import register as register_belief
    from .gateway import register as register_gateway
    from .mcp import register as register_mcp
    from .recall import register as register_recall
    from .stats import register as register_stats
    from .tail import register as register_tail
    from .timeline import register as register_timeline
    from .transfer import register as register_transfer

    register_recall(app)
    register_tail(app)
    register_stats(app)
    register_admin(app)
    register_belief(app)  # belief confirm|correct
    register_gateway(app)  # gateway, token
    register_mcp(app)
    register_transfer(app)
    register_timeline(app)


_mount()


def main() -> None:  # pragma: no cover - console entry
    """Run the command; whatever escapes a command still ends as one line (see fail)."""
    try:
        app(prog_name="blackboard")
    except Exception as exc:
        try:
            fail(exc)
        except typer.Exit as done:
            raise SystemExit(done.exit_code) from None
