"""`blackboard transfer A B` (issue 27 item 2) as a user runs it: a real process."""

from __future__ import annotations

import asyncio
import json

import pytest
import redis
from cli_support import cli

from blackboard import Blackboard
from blackboard.acl import AclAdmin

pytestmark = pytest.mark.process  # the CLI as a process (cli_support.cli)


async def _revoke(url: str) -> None:
    async with Blackboard.connect(url) as bb:
        for agent in ("gen1", "gen2", "outsider"):
            await AclAdmin(bb).revoke(agent)


async def _seed(url: str) -> None:
    async with Blackboard.connect(url) as bb:
        admin = AclAdmin(bb)
        await admin.grant("gen1", ["ops"])
        await admin.grant("gen2", ["ops"])
        await admin.grant("outsider", ["ops", "sales"])
        for i in range(3):
            await bb.scope("agent:gen1:ltm:semantic").write(f"Globex fact {i}", tags={"fact"})
        await bb.scope("agent:gen1:ltm:procedural").write("send, wait, chase")


def test_transfer_copies_once_and_refuses_clearly(redis_url: str,
                                                  clean_redis: redis.Redis) -> None:
    asyncio.run(_seed(redis_url))
    try:
        _transfer(redis_url, clean_redis)
    finally:
        asyncio.run(_revoke(redis_url))  # ACL users outlive the flushed data


def _transfer(redis_url: str, clean_redis: redis.Redis) -> None:
    r = cli("transfer", "gen1", "gen2", "--redis-url", redis_url)
    assert r.code == 0, r.err
    assert "gen1 -> gen2: copied 4 (episodic 0, semantic 3, procedural 1); 0 already" in r.out
    r = cli("transfer", "gen1", "gen2", "--levels", "semantic,ltm:semantic", "--json",
            "--redis-url", redis_url)
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["copied"] == {"semantic": 0} and doc["present"] == {"semantic": 3}
    line = cli("transfer", "gen1", "gen1", "--redis-url", redis_url).one_line_error(2)
    assert "itself" in line
    line = cli("transfer", "gen1", "gen2", "--level", "working",
               "--redis-url", redis_url).one_line_error(2)
    assert "not a long-term level" in line
    line = cli("transfer", "gen1", "outsider", "--redis-url", redis_url).one_line_error(4)
    assert "sales" in line
    assert clean_redis.exists("bb:acl:agents")
    assert not [k for k in clean_redis.scan_iter("*agent:outsider:ltm*")]
