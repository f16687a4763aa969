"""Issue 16: output for people and for programs. Every command answers --help and takes
--json; values print as text (wrapped, never a dict repr, never cut to '…'); stats is a
summary (--all for every partition); worker and server print a ready line; tail prints
what exists and stops."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
import redis
import typer.main
from cli_support import SECRET, cli
from typer.testing import CliRunner

from blackboard import Blackboard
from cli.app import app
from memory import AgentMemory

LONG = ("the nightly build failed on step three because the ledger service timed out while "
        "posting invoice batch 42 for Acme Corp, and the retry policy gave up after five tries")


def _commands() -> Iterator[tuple[tuple[str, ...], object]]:
    def walk(cmd: object, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], object]]:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, c in subs.items():
                yield from walk(c, (*path, name))
        else:
            yield path, cmd

    yield from walk(typer.main.get_command(app), ())


def test_every_command_answers_help_and_takes_json() -> None:
    cmds = list(_commands())
    assert len(cmds) >= 15
    runner = CliRunner()
    for path, cmd in cmds:
        res = runner.invoke(app, [*path, "--help"])
        assert res.exit_code == 0 and "Usage" in res.output, (path, res.output)
        opts = {o for p in cmd.params for o in getattr(p, "opts", [])}  # type: ignore[attr-defined]
        assert "--json" in opts, f"{' '.join(path)} has no --json"
    assert runner.invoke(app, ["--help"]).exit_code == 0


@pytest.fixture()
def seeded(redis_url: str, clean_redis: redis.Redis) -> str:
    async def seed() -> None:
        async with Blackboard.connect(redis_url) as bb, \
                AgentMemory(bb, "a1", teams=["t1"], default_retriever=False) as m:
            await m.install_default_hierarchy()
            await m.store({"text": LONG, "attempt": 5}, tags={"failure"})
            await m.store({"status": "ok", "n": 3}, tags={"note"})  # no text field
            await m.store("Bob likes chess", tags={"fact"})

    asyncio.run(seed())
    return redis_url


@pytest.mark.process  # cli_support.cli
def test_recall_prints_text_wrapped_at_80_columns(seeded: str) -> None:
    r = cli("recall", "build failed ledger", "--agent", "a1", url=seeded, columns=80)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert max(len(ln) for ln in lines) <= 80
    flat = " ".join(" ".join(ln.strip(" │┃").split()) for ln in lines)
    for word in ("nightly", "ledger", "Acme", "five", "tries"):  # all of it, wrapped
        assert word in flat
    assert "{'" not in r.out and "…" not in r.out
    wide = cli("recall", "build failed ledger", "--agent", "a1", "--explain", url=seeded,
               columns=200)
    assert "fused" in wide.out and "bm25" in wide.out and wide.code == 0
    assert "1. 'the nightly build" in wide.out  # explain() starts with the text


@pytest.mark.process  # cli_support.cli
def test_recall_json_shape(seeded: str) -> None:
    r = cli("recall", "", "--agent", "a1", "--json", url=seeded)
    hits = json.loads(r.out)
    assert {"rank", "id", "scope", "value", "text", "tags", "score", "fused", "dense",
            "bm25", "strength", "recency", "importance", "also_in"} <= hits[0].keys()
    texts = {h["text"] for h in hits}
    assert LONG in texts and '{"status":"ok","n":3}' in texts  # compact JSON, not a repr


@pytest.mark.process  # cli_support.cli
def test_stats_summary_and_all(seeded: str) -> None:
    s = cli("stats", url=seeded, columns=80)
    assert s.code == 0 and "partitions:" in s.out and "{'" not in s.out
    full = cli("stats", "--all", url=seeded, columns=200)
    parts = json.loads(cli("stats", "--json", url=seeded).out)["partitions"]
    assert len(s.out.splitlines()) < parts  # a summary, not a row per partition
    assert f"all {parts} partitions" in full.out
    assert len(full.out.splitlines()) > parts


@pytest.mark.process  # cli_support.cli
def test_map_and_tail(seeded: str) -> None:
    m = cli("map", "--agent", "a1", "--team", "t1", url=seeded, columns=80)
    assert m.code == 0 and "agent:a1:working" in m.out
    assert max(len(ln) for ln in m.out.splitlines()) <= 80
    t = cli("tail", "agent:a1:working", "--limit", "2", "--json", url=seeded, timeout=30)
    evs = [json.loads(ln) for ln in t.out.splitlines()]
    assert t.code == 0 and len(evs) == 2 and {e["type"] for e in evs} == {"written"}
    allv = cli("tail", "agent:a1:working", "--since", "0", "--limit", "10", "--json",
               url=seeded, timeout=30)
    assert len(allv.out.splitlines()) == 3  # what exists, then it stops
    empty = cli("tail", "agent:a1:stm", url=seeded, timeout=30)  # registered, no events
    assert empty.code == 0 and "no events" in empty.out


@pytest.mark.process  # the CLI as a process
def test_tail_follow_says_what_it_waits_for(seeded: str) -> None:
    env = {**os.environ, "BLACKBOARD_REDIS_URL": seeded}
    p = subprocess.Popen([sys.executable, "-m", "cli", "tail", "agent:a1:working",
                          "--follow", "--limit", "1", "--json"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None and p.stderr is not None
        assert json.loads(p.stdout.readline())["type"] == "written"
        assert "following agent:a1:working" in p.stderr.readline()

        async def write() -> None:
            async with Blackboard.connect(seeded) as bb:
                await bb.scope("agent:a1:working").write("one more")

        asyncio.run(write())
        assert json.loads(p.stdout.readline())["type"] == "written"
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(20)


@pytest.mark.process  # the CLI as a process
def test_worker_ready_line_masks_the_password(redis_url: str, clean_redis: redis.Redis) -> None:
    clean_redis.execute_command("ACL", "SETUSER", "d16-worker", "on", f">{SECRET}", "~*", "&*",
                                "+@all")
    url = redis_url.replace("redis://", f"redis://d16-worker:{SECRET}@", 1)
    env = {**os.environ, "COLUMNS": "200"}
    p = subprocess.Popen([sys.executable, "-m", "cli", "worker", "--role", "summarize",
                          "--redis-url", url], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        line = p.stdout.readline()
        assert line.startswith("ready: worker summarize") and "d16-worker:***@" in line
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == 0
        rest = p.stdout.read() + (p.stderr.read() if p.stderr else "")
        assert SECRET not in line + rest and "Traceback" not in rest
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        clean_redis.execute_command("ACL", "DELUSER", "d16-worker")


@pytest.mark.process  # the CLI as a process
def test_server_ready_line(tmp_path: object) -> None:
    p = subprocess.Popen([sys.executable, "-m", "cli", "server", "--port", "0",
                          "--data-dir", f"{tmp_path}/redis"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        line = p.stdout.readline()
        assert line.startswith("ready: redis-server ") and "redis://127.0.0.1:" in line
        assert line.rstrip().endswith("Ctrl-C to stop")  # one line, not wrapped
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
