"""`blackboard token create|list|revoke` and `blackboard gateway` flags, as processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.gateway.gateway_support import ROOT


def cli(gateway, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BLACKBOARD_REDIS_URL": gateway.redis.admin_url,
           "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def test_create_list_revoke_through_the_cli(gateway):
    made = json.loads(cli(gateway, "token", "create", "--agent", "alice", "--team", "t1",
                          "--json").stdout)
    assert made["agent"] == "alice" and made["teams"] == ["t1"]
    assert made["user"] == "bb-agent-alice" and made["token"].startswith("bbt_")
    other = json.loads(cli(gateway, "token", "create", "--agent", "alice", "--json").stdout)
    assert other["teams"] == ["t1"]  # no --team: the agent keeps its teams
    listed = json.loads(cli(gateway, "token", "list", "--json").stdout)
    assert {t["id"] for t in listed} == {made["id"], other["id"]}
    assert all("sha256" not in t and "token" not in t for t in listed)
    assert made["token"] not in cli(gateway, "token", "list").stdout

    with gateway.client(made["token"]) as a, gateway.client(other["token"]) as b:
        assert a.post("/v1/memories", json={"value": "x"}).status_code == 201
        assert b.get("/v1/tags").status_code == 200
        out = cli(gateway, "token", "revoke", made["id"])
        assert made["id"] in out.stdout
        # at once: the revoked token's open pool was killed, its re-login refused
        r = a.get("/v1/tags")
        assert r.status_code == 401 and r.json()["error"] == "unauthorized", r.text
        # and stays refused (its pool dropped, a fresh login refused too)
        for _ in range(2):
            assert a.post("/v1/memories", json={"value": "z"}).status_code == 401
        # the agent's other token keeps working (its connections re-login)
        assert b.get("/v1/tags").json() == {"tags": {}}
        assert b.post("/v1/memories", json={"value": "y"}).status_code == 201
    listed = json.loads(cli(gateway, "token", "list", "--json").stdout)
    assert [t["id"] for t in listed] == [other["id"]]
    again = cli(gateway, "token", "revoke", made["id"], check=False)
    assert again.returncode == 1 and "no token" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1


def test_operator_token_and_bad_input(gateway):
    op = json.loads(cli(gateway, "token", "create", "--agent", "ops", "--operator",
                        "--json").stdout)
    assert op["operator"] is True and op["user"] == "bb-service"
    with gateway.client(op["token"]) as c:
        assert c.get("/v1/map").json()["agent"] == "*"
    bad = cli(gateway, "token", "create", "--agent", "no spaces", check=False)
    assert bad.returncode == 2 and "agent id" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_insecure_local_only_on_loopback(gateway):
    p = cli(gateway, "gateway", "--insecure-local", "--host", "0.0.0.0", check=False)
    assert p.returncode == 2
    assert "127.0.0.1" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_insecure_local_serves_without_tokens(gateway, start_gateway):
    # A local setup: the gateway's Redis URL logs in by itself (here: the admin's).
    gw = start_gateway(insecure_local="true", redis_url=gateway.redis.admin_url)
    with gw.client() as c:
        r = c.post("/v1/memories", json={"value": "local note"})
        assert r.status_code == 201, r.text
        assert r.json()["scope"] == "agent:local:working"


def test_gateway_without_a_usable_service_login_is_one_line(gateway):
    env_url = gateway.redis.url  # no credentials: the protected default user refuses
    p = subprocess.run([sys.executable, "-m", "cli", "gateway", "--redis-url", env_url,
                        "--port", "1"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT),
                            "BLACKBOARD_GATEWAY_SERVICE_URL": ""})
    assert p.returncode == 2, p.stderr
    assert "SERVICE_URL" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_gateway_says_where_it_listens_and_mcp_errors_as_json(gateway):
    from tests.gateway.gateway_support import free_port

    port = free_port()
    env = {**os.environ, "BLACKBOARD_REDIS_URL": gateway.redis.url, "PYTHONPATH": str(ROOT),
           "BLACKBOARD_GATEWAY_SERVICE_URL": gateway.redis.admin_url,
           "BLACKBOARD_PARTITIONS": "8"}
    p = subprocess.Popen([sys.executable, "-m", "cli", "gateway", "--port", str(port),
                          "--json"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        info = json.loads(p.stdout.readline())  # printed once the port listens
        assert info["url"] == f"http://127.0.0.1:{port}" and info["auth"] == "bearer tokens"
        import httpx

        assert httpx.get(info["url"] + "/healthz", timeout=5).status_code == 200
        revoked = json.loads(cli(gateway, "token", "revoke", "nope", check=False).stdout
                             or "null")
        assert revoked is None  # an unknown id is an error, not a JSON success
    finally:
        p.terminate()
        p.wait(30)

    bad = subprocess.run([sys.executable, "-m", "cli", "mcp", "--json"], cwd=ROOT,
                         env={k: v for k, v in env.items() if k != "BLACKBOARD_TOKEN"},
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stdout == ""  # stdout belongs to the MCP stream
    err = json.loads(bad.stderr.strip().splitlines()[-1])
    assert err["error"] == "usage" and "BLACKBOARD_TOKEN" in err["detail"]
