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
        assert r.config_get("maxmemory")["maxmemory"] == str(1 << 30)  # 1gb unless told
        assert info["maxmemory"] == "1gb"
        r.set("k", "v")
        r.close()
        p.send_signal(signal.SIGTERM)
        assert p.wait(20) == 0
    finally:
        if p.poll() is None:
            p.kill()
    assert any(data.rglob("*.aof*")), "AOF files are kept in the data directory"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_server_maxmemory_is_set_by_option_and_check_notes_a_server_without_one(
        tmp_path: Path) -> None:
    bad = _cli("server", "--port", "0", "--maxmemory", "lots")
    assert bad.returncode == 2 and "--maxmemory 'lots' is not a size" in bad.stderr
    assert len([ln for ln in bad.stderr.splitlines() if ln.strip()]) == 1
    p = subprocess.Popen(
        [sys.executable, "-m", "cli", "server", "--port", "0", "--data-dir",
         str(tmp_path / "redis"), "--maxmemory", "0", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert p.stdout is not None
        url = json.loads(p.stdout.readline())["url"]
        r = redis.Redis.from_url(url)
        assert r.config_get("maxmemory")["maxmemory"] == "0"
        unlimited = _cli("check", "--redis-url", url)
        assert unlimited.returncode == 0, unlimited.stderr
        assert "without a memory limit (maxmemory 0)" in unlimited.stdout
        r.config_set("maxmemory", "256mb")
        limited = _cli("check", "--redis-url", url, "--json")
        assert limited.returncode == 0 and json.loads(limited.stdout)["notes"] == []
        r.close()
        p.send_signal(signal.SIGTERM)
        assert p.wait(20) == 0
    finally:
        if p.poll() is None:
            p.kill()
