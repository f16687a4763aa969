"""What every ``blackboard`` command shares (cli/options.py): the missing-URL
mistake, and the one report path of ``sweep`` and ``trim``; the module docstring of
cli/app.py names every command."""

from __future__ import annotations

import asyncio
import json

import pytest
from cli_support import cli

from blackboard import Blackboard
from cli import app as cli_module

SCOPE = "agent:a1:working"


def test_the_cli_docstring_names_every_command() -> None:
    app = cli_module.app
    names = [c.name or c.callback.__name__ for c in app.registered_commands if c.callback]
    names += [g.name for g in app.registered_groups if g.name]
    assert {"server", "sweep", "trim", "recall", "check", "acl"} <= set(names)
    doc = cli_module.__doc__ or ""
    assert [n for n in names if f"``{n}" not in doc] == []


@pytest.mark.process  # cli_support.cli
def test_no_url_is_the_same_usage_line_in_every_module() -> None:
    lines = {args: cli(*args).one_line_error(2)
             for args in (("sweep",), ("trim", "--dry-run"), ("check",), ("acl", "list"))}
    assert len(set(lines.values())) == 1, lines
    assert "BLACKBOARD_REDIS_URL" in next(iter(lines.values()))


@pytest.mark.process  # cli_support.cli
async def test_sweep_reports_then_removes_expired_entries(redis_url: str) -> None:
    async with Blackboard.connect(redis_url) as bb:
        s = bb.scope(SCOPE)
        await s.write("live", ttl=3600)
        for i in range(3):
            await s.write({"i": i}, ttl=0.05)
    await asyncio.sleep(0.1)

    dry = cli("sweep", "--dry-run", "--json", url=redis_url)
    assert dry.code == 0, dry.err
    assert json.loads(dry.out) == {"expired": {SCOPE: 3}, "dry_run": True}
    said = cli("sweep", "--dry-run", url=redis_url)
    assert said.out.strip() == "would expire 3 entries in 1 scopes"
    done = cli("sweep", url=redis_url)
    assert done.code == 0 and done.out.strip() == "expired 3 entries in 1 scopes", done
    again = cli("sweep", "--json", url=redis_url)
    assert json.loads(again.out) == {"expired": {}, "dry_run": False}


@pytest.mark.process  # cli_support.cli
async def test_trim_dry_run_and_trim_say_the_same_count(redis_url: str) -> None:
    async with Blackboard.connect(redis_url) as bb:
        for i in range(5):
            await bb.scope(SCOPE).write({"i": i})

    dry = cli("trim", "--dry-run", "--json", url=redis_url)
    assert dry.code == 0, dry.err
    rep = json.loads(dry.out)
    assert rep["dry_run"] is True
    total = sum(rep["trimmed"].values())
    assert cli("trim", "--dry-run", url=redis_url).out.strip() == f"would trim {total} events"
    done = cli("trim", url=redis_url)
    assert done.code == 0 and done.out.strip() == f"trimmed {total} events", done
