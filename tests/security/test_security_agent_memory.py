"""AgentMemory connected as a confined agent user works exactly as before; the CLI grants."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from blackboard import AccessDenied, Blackboard, Event
from blackboard.acl import AclAdmin
from cli.app import app
from memory import AgentMemory, MemoryLevel, MemoryQuery, TagFilter
from memory.access import provision_agent


async def test_agent_memory_under_agent_user(bb: Blackboard, redis_url: str) -> None:
    g = await AclAdmin(bb).grant("a1", ["t1"], rotate=True)
    await provision_agent(bb, "a1", ["t1"])
    col = await bb.scope("collective").write("shared", tags={"c"})
    try:
        async with (Blackboard.connect(redis_url, username=g.username,
                                       password=g.password) as abb,
                    AgentMemory(abb, "a1", teams=["t1"]) as mem):
            seen: list[Event] = []
            h = mem.on_change("agent:a1:*", seen.append, block_ms=100)
            hc = mem.on_change("collective", seen.append, block_ms=100)
            await h.ready()
            await hc.ready()
            e = await mem.store({"step": 1}, level=MemoryLevel.WORKING, tags={"act"},
                                key="s1")
            t = await mem.store("team", level=MemoryLevel.WORKING, team="t1")
            hits = await mem.recall(
                MemoryQuery(order="newest", tag_filter=TagFilter(all_of={"act"})))
            assert [x.entry.id for x in hits] == [e.id]
            hits = await mem.recall(MemoryQuery(order="newest", key_pattern="s*"))
            assert [x.entry.id for x in hits] == [e.id]
            assert (await mem.list_tags(MemoryLevel.WORKING)) == {"act": 1}
            assert (await mem.reinforce(e.id))[1] == 1
            moved = await mem.transfer(e.id, MemoryLevel.STM)
            assert await mem.forget(moved.id)
            assert t.scope == "team:t1:working"
            stats = await mem.stats()
            assert stats["team:t1:working"].count == 1
            await mem.memory_map()
            c2 = await bb.scope("collective").write("later")
            async with asyncio.timeout(5):
                while c2.id not in {ev.entry_id for ev in seen}:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
            assert {(ev.scope, ev.entry_id) for ev in seen} >= {
                ("agent:a1:working", e.id), ("collective", c2.id)}
            assert col.id
            with pytest.raises(AccessDenied):
                await mem.store("x", level=MemoryLevel.WORKING, team="t2")
            # Redis refuses even when our own access check is bypassed
            with pytest.raises(AccessDenied):
                await abb.scope("agent:a2:working").write("bypass")
    finally:
        await AclAdmin(bb).revoke("a1")


def test_cli_acl_grant_list_revoke_and_check(secure_clean: Any, tmp_path: Path) -> None:
    # secure mode: `acl grant` refuses while the default user is open
    redis_url = secure_clean.admin_url
    r = CliRunner()
    pw = tmp_path / "a1.pw"
    out = r.invoke(app, ["acl", "grant", "a1", "--team", "t1", "--password-file", str(pw),
                         "--redis-url", redis_url, "--json"])
    assert out.exit_code == 0, out.output
    assert stat.S_IMODE(os.stat(pw).st_mode) == 0o600
    assert "password" not in json.loads(out.stdout)
    again = r.invoke(app, ["acl", "grant", "a1", "--team", "t1", "--team", "t2",
                           "--redis-url", redis_url, "--json"])
    assert json.loads(again.stdout)["password_changed"] is False
    lst = r.invoke(app, ["acl", "list", "--redis-url", redis_url, "--json"])
    assert json.loads(lst.stdout) == [{"agent": "a1", "username": "bb-agent-a1",
                                       "teams": ["t1", "t2"], "enabled": True, "exists": True}]
    chk = r.invoke(app, ["check", "--redis-url", redis_url, "--json"])
    assert chk.exit_code == 0 and json.loads(chk.stdout)["ok"] is True
    bad = r.invoke(app, ["acl", "grant", "a{1}", "--redis-url", redis_url])
    assert bad.exit_code == 2 and "agent id" in bad.output  # usage (cli/errors.py)
    rev = r.invoke(app, ["acl", "revoke", "a1", "--redis-url", redis_url, "--json"])
    assert json.loads(rev.stdout) == {"agent": "a1", "revoked": True}
