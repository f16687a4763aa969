"""An idle worker is idle: one ``--role all`` process with the default settings issues at
most 20 Redis commands a second (counted by INFO commandstats, scripts' inner commands
included), holds no more connections than its pool allows, logs no MaxConnectionsError and
exits 0 on SIGTERM. Also: metrics for ``--role all`` and ``--concurrency 2``."""

from __future__ import annotations

import importlib.util
import os
import random
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import redis
from workers_support import stop_worker, wait_until

from workers.roles import ROLES

pytestmark = pytest.mark.process  # worker processes

ROOT = Path(__file__).resolve().parents[2]


def _bench_module() -> Any:
    """bench/idle_worker.py, loaded by path (bench/ on sys.path would shadow packages:
    bench/consolidation.py is not the consolidation package)."""
    spec = importlib.util.spec_from_file_location("bench_idle_worker", ROOT / "bench" /
                                                  "idle_worker.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


command_calls = _bench_module().command_calls

#: issue 11: at most 20 commands a second on average from one idle ``--role all`` worker
MAX_IDLE_COMMANDS_PER_S = 20


def _defaults_env() -> dict[str, str]:
    """The environment without any BLACKBOARD_WORKER_* tuning: the default settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLACKBOARD_WORKER_")}
    return env | {"PYTHONUNBUFFERED": "1"}


def _worker(
    url: str, *args: str, log: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    with open(log, "wb") as f:
        return subprocess.Popen(
            [sys.executable, "-m", "cli", "worker", "--redis-url", url, *args],
            env=_defaults_env() | (env or {}), stdout=f, stderr=subprocess.STDOUT,
        )



def test_idle_all_roles_worker_stays_under_the_command_bound(
    redis_url: str, clean_redis: redis.Redis, tmp_path: Path
) -> None:
    r = clean_redis
    log = tmp_path / "worker.log"
    p = _worker(redis_url, "--role", "all", log=log)
    try:
        wait_until(lambda: r.zcard("bb:workers:role:index") == 1, 60, "the worker's heartbeat")
        # Past the start-up: the readers' claim window after taking their partitions over
        # (lease TTL + 2 heartbeats + 2 claim idles = 9 s by default).
        time.sleep(12)
        before = command_calls(r)
        time.sleep(15)
        after = command_calls(r)
        delta = {k: after[k] - before.get(k, 0) for k in after}
        delta["info"] -= 1  # the second INFO commandstats is this test's
        total = sum(v for v in delta.values() if v > 0)
        top = sorted(delta.items(), key=lambda kv: -kv[1])[:8]
        assert total <= MAX_IDLE_COMMANDS_PER_S * 15, f"{total / 15:.1f} commands/s: {top}"
        assert p.poll() is None
    finally:
        text = stop_worker(p, log)
    assert "MaxConnectionsError" not in text and "Too many connections" not in text
    assert "Traceback" not in text, text[-3000:]


def test_no_max_connections_error_with_the_default_pool(
    redis_url: str, clean_redis: redis.Redis, tmp_path: Path
) -> None:
    """The issue's case: seven roles, 16 partitions, every reader blocking on its own
    connection; the pool grows by what the blocking readers hold."""
    r = clean_redis
    log = tmp_path / "worker.log"
    p = _worker(redis_url, "--role", "all", log=log)
    try:
        wait_until(lambda: r.zcard("bb:workers:role:index") == 1, 60, "the worker's heartbeat")
        time.sleep(10)
        clients = len(r.client_list())
        # 6 consuming roles x 16 partitions readers + 16 relays + short commands.
        assert clients > 6 * 16, clients
    finally:
        text = stop_worker(p, log)
    assert "MaxConnectionsError" not in text and "Too many connections" not in text
    assert "Traceback" not in text, text[-3000:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _free_pair() -> int:
    """A port that is free with the next one, below the ephemeral range (an outgoing
    connection's local port there could hold port + 1)."""
    for _ in range(200):
        port = random.randint(20_000, 30_000)
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise AssertionError("no two consecutive free ports")


def _scrape(port: int) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
            return str(resp.read().decode())
    except OSError:
        return None


def test_metrics_port_with_role_all_has_one_series_per_role(
    redis_url: str, clean_redis: redis.Redis, tmp_path: Path
) -> None:
    port = _free_port()
    log = tmp_path / "worker.log"
    p = _worker(redis_url, "--role", "all", "--metrics-port", str(port), log=log)
    try:
        text: list[str] = []

        def scraped() -> bool:
            assert p.poll() is None, log.read_text(errors="replace")[-3000:]
            got = _scrape(port)
            text[:] = [got] if got else []
            return bool(got)

        wait_until(scraped, 60, "the metrics endpoint")
        body = text[0]
        roles = set(re.findall(r'^blackboard_worker_batches\{role="([^"]+)"', body, re.M))
        assert roles == set(ROLES), body
        # One TYPE line per family, however many roles report it.
        assert body.count("# TYPE blackboard_worker_batches counter") == 1
    finally:
        text_log = stop_worker(p, log)
    assert "address already in use" not in text_log.lower()


@pytest.mark.parametrize("given_by", ["flag", "env"])
def test_metrics_port_with_concurrency_2_serves_one_endpoint_per_process(
    redis_url: str, clean_redis: redis.Redis, tmp_path: Path, given_by: str
) -> None:
    port = _free_pair()
    log = tmp_path / "worker.log"
    args = ["--role", "summarize", "--concurrency", "2"]
    if given_by == "flag":
        p = _worker(redis_url, *args, "--metrics-port", str(port), log=log)
    else:
        p = _worker(redis_url, *args, log=log,
                    env={"BLACKBOARD_WORKER_METRICS_PORT": str(port)})
    try:
        for q in (port, port + 1):
            wait_until(lambda q=q: _scrape(q) is not None, 60, f"metrics on port {q}")
        workers = set()
        for q in (port, port + 1):
            body = _scrape(q) or ""
            ids = set(re.findall(r'^blackboard_worker_batches\{role="summarize",'
                                 r'worker="([^"]+)"\}', body, re.M))
            assert len(ids) == 1, body
            workers |= ids
        assert len(workers) == 2  # two processes, each its own endpoint and series
    finally:
        stop_worker(p, log)
