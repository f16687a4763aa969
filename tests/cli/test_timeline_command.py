"""``blackboard timeline --agent A [--at 2023-05]`` as a user runs it: readable at 80
columns, ``--json`` for programs, ``--rebuild``, ``--expand``; a bad ``--at`` or
``--depth`` is one line (exit 2)."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime

import pytest
import redis
from cli_support import cli

from blackboard import Blackboard
from memory import AgentMemory, Message

pytestmark = pytest.mark.process  # the CLI as a process (cli_support.cli)


def _seed(url: str) -> None:
    async def go() -> None:
        async with (Blackboard.connect(url) as bb,
                    AgentMemory(bb, "a1", default_retriever=False) as mem):
            for day, texts in ((8, ["I adopted a puppy named Oscar.", "Oscar loves the park."]),
                               (25, ["We ran a charity race for mental health."])):
                await mem.add_messages(f"s{day}", [
                    Message("Ana", t, datetime(2023, 5, day, 13, i)) for i, t in enumerate(texts)])

    asyncio.run(go())


def test_timeline_command(redis_url: str, clean_redis: redis.Redis) -> None:
    _seed(redis_url)
    r = cli("timeline", "--agent", "a1", "--rebuild", "--json", url=redis_url)
    assert r.code == 0 and json.loads(r.out)["agent:a1:ltm:episodic"] == 3, r.err
    r = cli("timeline", "--agent", "a1", "--at", "2023-05", "--depth", "3", url=redis_url)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == "month m2023-05" and "3 entries" in lines[1]
    assert max(len(ln) for ln in lines) <= 80 and "Oscar" in r.out
    node = json.loads(cli("timeline", "--agent", "a1", "--at", "2023-05-08", "--json",
                          url=redis_url).out)
    assert node["level"] == "day" and node["nodes"][0]["level"] == "segment"
    ref = node["nodes"][0]["ref"]
    got = json.loads(cli("timeline", "--agent", "a1", "--expand", ref, "--json",
                         url=redis_url).out)
    assert [g["value"]["text"] for g in got] == ["I adopted a puppy named Oscar.",
                                                "Oscar loves the park."]
    assert "at:" in cli("timeline", "--agent", "a1", "--at", "2023-13",
                        url=redis_url).one_line_error(2)
    assert "depth:" in cli("timeline", "--agent", "a1", "--depth", "-1",
                           url=redis_url).one_line_error(2)
