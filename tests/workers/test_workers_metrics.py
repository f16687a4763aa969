"""Metrics and stats: a worker's Prometheus text on --metrics-port; collect_stats and
`blackboard stats --json` show groups, lag, pending and DLQ sizes. And compose.yaml."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import redis
import yaml
from workers_support import FAST

from blackboard import Blackboard, WriteRequest
from blackboard.keys import PartitionKeys
from memory.registry import Registry
from memory.subscriptions import MemorySubscription, Trigger
from workers.roles import ROLES
from workers.stats import collect_stats

pytestmark = pytest.mark.process  # a worker process and the CLI

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain")
        return str(resp.read().decode())


def _metric(text: str, name: str) -> float:
    m = re.search(rf'^blackboard_worker_{name}{{role="summarize",worker="[^"]+"}} (\S+)$',
                  text, re.M)
    assert m, f"no {name} in\n{text}"
    return float(m.group(1))


async def test_metrics_endpoint_and_stats(
    bb: Blackboard, clean_redis: redis.Redis, redis_url: str
) -> None:
    reg = Registry(bb)
    await reg.save_edge(
        MemorySubscription("agent:*:working", "agent:{1}:stm", "summarize",
                           trigger=Trigger.count(10))
    )
    await reg.aclose()
    port = _free_port()
    env = {**os.environ, **FAST}
    proc = subprocess.Popen(  # noqa: ASYNC220
        [sys.executable, "-m", "cli", "worker", "--role", "summarize",
         "--redis-url", redis_url, "--metrics-port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                text = await asyncio.to_thread(_scrape, port)
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                await asyncio.sleep(0.1)
        assert "# TYPE blackboard_worker_events counter" in text
        assert "# TYPE blackboard_worker_partitions gauge" in text
        assert _metric(text, "events") == 0
        await bb.scope("agent:a1:working").write_many(
            [WriteRequest(f"w{i}") for i in range(30)]
        )
        deadline = time.monotonic() + 15
        while True:
            text = await asyncio.to_thread(_scrape, port)
            if _metric(text, "fired") >= 1 and _metric(text, "events") >= 30:
                break
            assert time.monotonic() < deadline, text
            await asyncio.sleep(0.1)
        # events counts the summary's own write event too (on a bus it reads), not buffered.
        assert _metric(text, "events") >= 30 and _metric(text, "buffered") == 30
        assert _metric(text, "written") >= 1 and _metric(text, "dead_lettered") == 0
        assert _metric(text, "partitions") == bb.partitions
        assert _metric(text, "stalls") == 0
        # Each partition's age of last progress (issue 23), one series per partition.
        ages = [ln for ln in text.splitlines()
                if ln.startswith('blackboard_worker_progress_age_seconds{role="summarize"')]
        assert len(ages) == bb.partitions, text
        assert "# TYPE blackboard_worker_progress_age_seconds gauge" in text
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:  # noqa: ASYNC210
            assert r.status == 200
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/nope", timeout=2)  # noqa: ASYNC210
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0, proc.stderr.read().decode() if proc.stderr else ""

    # Stats: one group behind (episodic never read), one DLQ entry, lag and pending.
    await bb.ensure_groups(["episodic"])
    p = bb.scope("agent:a1:working").partition
    pk = PartitionKeys(p)
    clean_redis.xadd(pk.dlq, {"kind": "dataflow", "reason": "test"})
    clean_redis.xreadgroup("episodic", "c", {pk.bus: ">"}, count=5)  # 5 pending
    st = await collect_stats(bb)
    bus = st.buses[p]
    groups = {g.role: g for g in bus.groups}
    length = clean_redis.xlen(pk.bus)
    assert bus.dlq == 1 and bus.length == length >= 30
    assert groups["summarize"].pending == 0 and groups["summarize"].lag in (0, None)
    assert groups["episodic"].pending == 5
    assert groups["episodic"].lag in (length - 5, None)  # None only where Redis cannot tell
    assert st.totals()["dlq"] == 1 and st.totals()["pending"] == 5

    out = subprocess.run(  # noqa: ASYNC221
        [sys.executable, "-m", "cli", "stats", "--json", "--redis-url", redis_url],
        capture_output=True, timeout=60, check=True,
    )
    data = json.loads(out.stdout)
    assert data["partitions"] == bb.partitions
    assert data["totals"]["dlq"] == 1 and data["totals"]["pending"] == 5
    jb = data["buses"][p]
    assert jb["dlq"] == 1
    jg = {g["role"]: g for g in jb["groups"]}
    assert jg["episodic"]["pending"] == 5 and jg["episodic"]["lag"] == groups["episodic"].lag


def test_compose_runs_redis_durably_and_names_real_roles() -> None:
    doc = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = doc["services"]
    cmd = services["redis"]["command"]
    cmd = cmd.split() if isinstance(cmd, str) else [str(c) for c in cmd]
    assert cmd[0] == "redis-server"

    def opt(name: str) -> str:
        return cmd[cmd.index(f"--{name}") + 1]

    assert opt("appendonly") == "yes"
    assert opt("maxmemory-policy") == "noeviction"
    workers = {}
    for name, svc in services.items():
        c = svc.get("command") or []
        c = c.split() if isinstance(c, str) else [str(x) for x in c]
        if "worker" in c:
            workers[name] = c
    if not workers:
        pytest.skip("compose.yaml has no worker services yet")
    for name, c in workers.items():
        assert "--role" in c, name
        role = c[c.index("--role") + 1]
        assert role in (*ROLES, "all"), f"service {name}: unknown role {role!r}"
        assert "redis" in services[name].get("depends_on", {}), name
