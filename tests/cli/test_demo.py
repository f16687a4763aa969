"""The CLI end to end: the demo (real worker processes) and the map, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cli.demo_agents import PROCEDURES

pytestmark = [pytest.mark.slow, pytest.mark.process]  # the CLI as a process


def _cli(*args: str, url: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BLACKBOARD_REDIS_URL": url}
    return subprocess.run(
        [sys.executable, "-m", "cli", *args], env=env, capture_output=True, text=True,
        timeout=timeout, check=False,
    )


def test_demo_consolidates_every_level_and_exits_0(redis_url: str, clean_redis: object) -> None:
    r = _cli("demo", "--agents", "2", "--steps", "80", "--json", url=redis_url)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert report["worker_exit_codes"] == [0] * 7
    assert report["dlq"] == {}
    kinds = {e["value"]["task_kind"] for e in report["procedures"]}
    assert kinds <= {"invoice", "reconcile", "support"} and kinds
    # one procedure per skill (issue 26), the learned ones with the skill's usual steps
    live = [e["value"] for e in report["procedures"] if "superseded" not in e["tags"]]
    assert sorted(v["task_kind"] for v in live) == sorted(kinds)
    assert all(tuple(v["steps"]) == PROCEDURES[v["task_kind"]]
               for v in live if v["status"] == "learned")
    facts = {e["key"] for e in report["semantic"]}
    assert "fact:acme-corp:lives_in" in facts
    # the move late in the run changed the belief: the live one names the new town
    live = [e for e in report["semantic"]
            if e["key"] == "fact:acme-corp:lives_in" and "superseded" not in e["tags"]]
    assert live and live[-1]["value"]["object"].lower() == "shelbyville"
    assert report["episodes"] and report["team"]
    assert all(len(e["value"]["steps"]) > 1 for e in report["episodes"])  # none cut short
    assert all(e["metadata"].get("attribution") for e in report["team"])

    m = _cli("map", "--agent", "agent1", "--team", "ops", "--json", url=redis_url, timeout=60)
    assert m.returncode == 0, m.stderr[-2000:]
    scopes = {s["scope"]: s for s in json.loads(m.stdout)["scopes"]}
    assert scopes["agent:agent1:ltm:procedural"]["count"] > 0
    assert "agent:agent2:working" not in scopes  # another agent's private scope is not shown
