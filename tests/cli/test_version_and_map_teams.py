"""``blackboard --version`` / ``-V`` (one line) and ``map --agent A`` showing the agent's
teams without ``--team`` (issue 30 items 1 and 2)."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json

from typer.testing import CliRunner

from blackboard import Blackboard
from blackboard.acl import AclAdmin
from cli import app as cli_app
from memory import install_default_hierarchy
from memory.teams import teams_of


def test_version_is_one_line() -> None:
    want = f"blackboard {importlib.metadata.version('reactive-blackboard')}\n"
    for flag in ("--version", "-V"):
        res = CliRunner().invoke(cli_app.app, [flag], prog_name="blackboard")
        assert res.exit_code == 0 and res.stdout == want, res.output


def test_map_finds_the_agents_teams(redis_url: str, clean_redis: object) -> None:
    async def seed() -> tuple[str, ...]:
        async with Blackboard.connect(redis_url) as bb:
            await install_default_hierarchy(bb, "a1", ["ops"])  # a team edge from a1:stm
            await AclAdmin(bb).grant("a1", ["research"])  # a team in the ACL grant
            try:
                return await teams_of(bb, "a1")
            finally:
                await AclAdmin(bb).revoke("a1")

    assert asyncio.run(seed()) == ("ops", "research")

    async def edges_only() -> tuple[str, ...]:
        async with Blackboard.connect(redis_url) as bb:
            return await teams_of(bb, "a1")

    assert asyncio.run(edges_only()) == ("ops",)  # no ACL user: the edges alone
    res = CliRunner().invoke(cli_app.app, ["map", "--agent", "a1", "--json"],
                             env={"BLACKBOARD_REDIS_URL": redis_url}, prog_name="blackboard")
    assert res.exit_code == 0, res.output
    got = json.loads(res.stdout)
    assert got["teams"] == ["ops"] and "team:ops" in [s["scope"] for s in got["scopes"]]
