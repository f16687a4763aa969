"""``blackboard server``: a private redis-server in the foreground, stopped cleanly."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis

pytestmark = pytest.mark.process  # `blackboard server` as a process


def test_server_command_runs_in_foreground_with_aof_and_stops_on_sigterm(tmp_path: Path) -> None:
    data = tmp_path / "redis"
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cli",
            "server",
            "--port",
            "0",
            "--data-dir",
            str(data),
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert p.stdout is not None
        info = json.loads(p.stdout.readline())
        r = redis.Redis.from_url(info["url"])
        assert r.ping()
        assert r.config_get("appendonly")["appendonly"] == "yes"
        assert r.config_get("maxmemory-policy")["maxmemory-policy"] == "noeviction"
        r.set("k", "v")
        r.close()
        p.send_signal(signal.SIGTERM)
        assert p.wait(20) == 0
    finally:
        if p.poll() is None:
            p.kill()
    assert any(data.rglob("*.aof*")), "AOF files are kept in the data directory"
