"""``blackboard recall --gateway URL --token T`` (issue 30 item 1): with a gateway running,
the CLI asks it (its index is warm) instead of indexing the agent's memory and loading the
model itself; the same hits, the same JSON; the agent is the token's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.gateway.gateway_support import ROOT, GatewayProc

pytestmark = pytest.mark.process  # the CLI as a process


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items()
            if k not in ("BLACKBOARD_TOKEN", "BLACKBOARD_GATEWAY_URL", "BLACKBOARD_REDIS_URL")}
    full.update(env or {}, PYTHONPATH=str(ROOT), COLUMNS="100")
    return subprocess.run([sys.executable, "-m", "cli", *args], env=full, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


def test_recall_over_a_running_gateway(gateway: GatewayProc) -> None:
    tok = gateway.token("gia", ["ops"])
    with gateway.client(tok) as c:
        for text in ("Acme pays net-30", "Globex prefers email invoices", "the lunch menu"):
            assert c.post("/v1/memories", json={"value": text, "tags": ["fact"]}).status_code == 201
        direct = c.post("/v1/recall", json={"query": "payment terms", "max_results": 2}).json()

    t0 = time.perf_counter()
    r = _cli("recall", "payment terms", "--max-results", "2", "--json",
             env={"BLACKBOARD_GATEWAY_URL": gateway.url, "BLACKBOARD_TOKEN": tok})
    took = time.perf_counter() - t0
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)
    assert [h["id"] for h in hits] == [h["entry"]["id"] for h in direct["hits"]]
    assert hits[0]["text"] == "Acme pays net-30" and hits[0]["scope"] == "agent:gia:working"
    t0 = time.perf_counter()
    assert _cli("--help").returncode == 0
    print(f"recall over the gateway {took:.2f}s, --help {time.perf_counter() - t0:.2f}s")

    table = _cli("recall", "payment terms", "--gateway", gateway.url, "--token", tok,
                 "--agent", "gia")
    assert table.returncode == 0, table.stderr
    assert "Acme pays net-30" in table.stdout and "agent gia" in table.stdout


def test_recall_over_a_gateway_says_what_is_wrong(gateway: GatewayProc) -> None:
    tok = gateway.token("gia", [])
    cases = {
        "--gateway needs the agent's token": ("--gateway", gateway.url),
        "is not the token's agent": ("--gateway", gateway.url, "--token", tok, "--agent", "bob"),
        "--agent is required": (),
    }
    for said, args in cases.items():
        r = _cli("recall", "x", *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert said in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    bad = _cli("recall", "x", "--gateway", gateway.url, "--token", "bbt_nope_nope")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
