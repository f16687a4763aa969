"""The ``blackboard`` command at 80 columns (issue 30 item 4): every help page and the
tables fit, nothing cut (``…``), no markup leaked; ``docs/cli-80col.txt`` is the capture
this test makes, so a change that widens the output shows up in review.

The capture is made in-process (typer's runner, the command's console at 80 columns) on
a seeded Redis; the stats section renders fixed worker heartbeats and bus counters, so
the file is the same on every run. A stale file is rewritten and the test fails: commit
the new one.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import typer.main
from typer.testing import CliRunner

from blackboard import Blackboard
from blackboard.bus import GroupInfo
from blackboard.pool_stats import PoolStats
from blackboard.scope_stats import STRENGTH_EDGES, ScopeStats, StrengthHistogram
from cli import app as cli_app
from cli import output
from cli.stats import ranges, render
from memory import AgentMemory, install_default_hierarchy
from workers.heartbeat import WorkerInfo
from workers.roles import ROLES
from workers.stats import BusStats, Stats

WIDTH = 80
CAPTURE = Path(__file__).resolve().parents[2] / "docs" / "cli-80col.txt"
#: Help pages shown in the capture (every page is checked, these are the ones people read).
SHOWN_HELP = [(), ("worker",), ("recall",), ("map",), ("stats",)]
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LEAKS = ("…", "``", "[/", "[bold", "[dim", "[red", "[yellow", ":func:", ":mod:")


def _run(*args: str, url: str | None = None) -> str:
    env = {"COLUMNS": str(WIDTH), "TERMINAL_WIDTH": str(WIDTH), "NO_COLOR": "1"}
    if url:
        env["BLACKBOARD_REDIS_URL"] = url
    res = CliRunner().invoke(cli_app.app, list(args), env=env, prog_name="blackboard")
    assert res.exit_code == 0, (args, res.output)
    return _ANSI.sub("", res.stdout)


def _commands() -> Iterator[tuple[str, ...]]:
    def walk(c: click.Command, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        yield path
        for name, sub in getattr(c, "commands", {}).items():
            yield from walk(sub, (*path, name))

    yield from walk(typer.main.get_command(cli_app.app), ())


def _bad_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if len(ln) > WIDTH or any(m in ln for m in _LEAKS)]


def _section(command: str, body: str) -> str:
    lines = [ln.rstrip() for ln in body.strip("\n").splitlines()]
    return "\n".join([f"$ {command}", *lines, ""])


async def _seed(url: str) -> None:
    async with Blackboard.connect(url) as bb:
        await install_default_hierarchy(bb, "agent1", ["ops"])
        async with AgentMemory(bb, "agent1", ["ops"]) as mem:
            for i in range(3):
                await mem.store(f"agent1 ran post_ledger for invoice-{i}: done.",
                                tags={"action"})


def _stats_sample() -> str:
    """``stats`` with two live workers and busy groups, from fixed heartbeats and counters
    (a real run's pids and ages change every time)."""
    roles = ("index", "semantic", "summarize")
    buses = tuple(
        BusStats(p, 20 + p, 1 if p == 3 else 0, 2,
                 tuple(GroupInfo(r, 2, 5 if (r == "index" and p < 4) else 0,
                                 3 if (r == "index" and p == 2) else 0, "0-0")
                       for r in roles))
        for p in range(16))
    workers = [
        WorkerInfo(id=f"{role}-build-host-7-{4121 + i}-{tag}", role=role, pid=4121 + i,
                   host="build-host-7", started_at=0, beat_at=0,
                   partitions=tuple(range(16)) if i == 0 else (0, 1, 2, 3, 5, 8, 9),
                   counters={"events": 1834, "written": 412, "dead_lettered": 1})
        for i, (role, tag) in enumerate((("all", "9f3a1c"), ("index", "07bd2e")))]
    with output.console.capture() as cap:
        render(Stats(16, buses), workers, show_all=False, now_ms=0, pool=_pool_sample())
    return cap.get()


def _pool_sample() -> list[ScopeStats]:
    """The memory pool section: fixed scopes, counts and evictions."""
    hist = StrengthHistogram(STRENGTH_EDGES, (0, 0, 0, 0, 0))
    rows = [("agent:agent1:working", 140, {"action": 140}, {"agent1": 140}, 0.97,
             {"expired": 0, "decayed": 0, "capacity": 61, "merged": 0}),
            ("team:ops", 37, {"summary": 30, "invoice": 12, "email": 4},
             {"agent1": 14, "agent2": 12, "": 11}, 0.81,
             {"expired": 0, "decayed": 3, "capacity": 0, "merged": 5}),
            ("agent:agent2:ltm:procedural", 4, {"procedure": 4}, {"agent2": 4}, 0.64,
             {"expired": 0, "decayed": 1, "capacity": 0, "merged": 0})]
    return [ScopeStats(s, n, tags, None, None, hist, PoolStats(removed, agents, avg, n))
            for s, n, tags, agents, avg, removed in rows]


@pytest.fixture
def narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output.console, "width", WIDTH)
    monkeypatch.setenv("COLUMNS", str(WIDTH))


def test_every_help_page_fits_80_columns(narrow: None) -> None:
    bad = {" ".join(p) or "(top)": b for p in _commands()
           if (b := _bad_lines(_run(*p, "--help")))}
    assert bad == {}


def test_worker_role_help_lists_every_role_in_full(narrow: None) -> None:
    text = " ".join(_run("worker", "--help").replace("│", " ").split())
    assert all(f"{r}," in text or f"{r};" in text for r in ROLES), text
    assert "all: every role" in text


def test_partition_lists_print_as_runs() -> None:
    assert ranges(tuple(range(16))) == "0-15"
    assert ranges([9, 0, 1, 2, 5, 8]) == "0-2,5,8-9"
    assert ranges(()) == ""


def test_stats_rows_stay_on_one_line(narrow: None) -> None:
    text = _stats_sample()
    assert _bad_lines(text) == []
    rows = [ln for ln in text.splitlines() if "build-host-7" in ln]
    assert len(rows) == 2 and "0-15" in rows[0], text  # one line per worker


def test_capture_is_current(narrow: None, redis_url: str, clean_redis: object) -> None:
    asyncio.run(_seed(redis_url))
    parts = ["# blackboard at 80 columns: tests/cli/test_cli_80col.py makes this file\n"]
    parts += [_section(f"blackboard {' '.join(p)} --help".replace("  ", " "),
                       _run(*p, "--help")) for p in SHOWN_HELP]
    parts.append(_section("blackboard map --agent agent1   # its team ops from the registry",
                          _run("map", "--agent", "agent1", url=redis_url)))
    parts.append(_section("blackboard stats   # two live workers, busy index group",
                          _stats_sample()))
    text = "\n".join(parts)
    assert _bad_lines(text) == []
    if not CAPTURE.exists() or CAPTURE.read_text(encoding="utf-8") != text:
        CAPTURE.write_text(text, encoding="utf-8")
        pytest.fail(f"{CAPTURE.name} was stale: rewritten, commit it")
