"""No way around the ACL: the default user, `acl protect-default`, `acl check`, persistence.

Real redis-servers throughout (the version in BLACKBOARD_REDIS_SERVER, or 8.2), the CLI
run in-process with typer's runner as an operator would run it.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from typer.testing import CliRunner

from blackboard.acl import agent_username
from blackboard.server import RedisServer
from cli.app import app

pytestmark = pytest.mark.redis  # starts its own redis-servers


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def refused_auth(port: int, user: str, password: str) -> bool:
    """``AUTH user password`` as a hostile client sends it (RESP, one round trip): True
    when Redis refuses it."""
    def bulk(x: str) -> bytes:
        b = x.encode()
        return b"$%d\r\n%s\r\n" % (len(b), b)

    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"*3\r\n" + bulk("AUTH") + bulk(user) + bulk(password))
        reply = s.recv(256)
    assert reply.startswith((b"+OK", b"-WRONGPASS")), reply
    return reply.startswith(b"-WRONGPASS")


def acl(r: redis.Redis, user: str, *rules: str) -> Any:
    """ACL SETUSER as written (redis-py's acl_setuser adds "off" unless told enabled)."""
    return r.execute_command("ACL", "SETUSER", user, *rules)


def codes(url: str) -> tuple[int, list[str], list[dict[str, Any]]]:
    out = cli("acl", "check", "--redis-url", url, "--json")
    assert out.exit_code in (0, 3), out.output
    report = json.loads(out.stdout)
    assert report["ok"] == (out.exit_code == 0)
    return out.exit_code, sorted({f["code"] for f in report["findings"]}), report["findings"]


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh server as `blackboard server` runs it: default user open, aclfile in the
    data directory."""
    srv = RedisServer(data_dir=tmp_path / "redis").start()
    yield srv
    srv.stop()


def admin_url(srv: RedisServer, password: str) -> str:
    return f"redis://default:{password}@127.0.0.1:{srv.port}/0"


def test_grant_is_refused_while_the_default_user_is_open(server: RedisServer) -> None:
    out = cli("acl", "grant", "a1", "--team", "t1", "--redis-url", server.url)
    assert out.exit_code == 4, out.output
    msg = " ".join(out.stderr.split())
    assert "default user is on with no password" in msg and "protect-default" in msg
    r = redis.Redis(port=server.port)
    try:  # nothing half-done: no user, no grant record
        assert r.acl_getuser(agent_username("a1")) is None
        assert not r.exists("bb:acl:agents")
    finally:
        r.close()


def test_protect_default_then_grant_and_both_survive_a_restart(
    server: RedisServer, tmp_path: Path
) -> None:
    pw_file = tmp_path / "default.pw"
    out = cli("acl", "protect-default", "--password-file", str(pw_file),
              "--redis-url", server.url)
    assert out.exit_code == 0, out.output
    password = pw_file.read_text().strip()
    assert stat.S_IMODE(os.stat(pw_file).st_mode) == 0o600
    assert password not in out.output  # written to the file, echoed nowhere
    for wrong in ("x", "", "nopass"):
        assert refused_auth(server.port, "default", wrong)
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(b"GET k\r\n")  # no AUTH at all
        assert s.recv(64).startswith(b"-NOAUTH")
    # the password is stored hashed only, in the aclfile beside the AOF
    acl_text = server.acl_path.read_text()
    assert password not in acl_text
    assert hashlib.sha256(password.encode()).hexdigest() in acl_text

    admin = admin_url(server, password)
    g = cli("acl", "grant", "a1", "--team", "t1", "--redis-url", admin, "--json")
    assert g.exit_code == 0, g.output
    agent_pw = json.loads(g.stdout)["password"]
    assert codes(admin)[0] == 0  # clean: protected default, aclfile, rules as granted

    server.stop()
    again = RedisServer(server.port, server.data_dir).start()
    try:
        assert refused_auth(again.port, "default", "x")
        assert not refused_auth(again.port, "default", password)
        assert not refused_auth(again.port, agent_username("a1"), agent_pw)
        assert codes(admin) == (0, [], [])
    finally:
        again.stop()


def test_protect_default_prints_the_password_once(server: RedisServer) -> None:
    out = cli("acl", "protect-default", "--redis-url", server.url, "--json")
    assert out.exit_code == 0, out.output
    password = json.loads(out.stdout)["password"]
    assert out.output.count(password) == 1 and password not in out.stderr
    assert refused_auth(server.port, "default", "wrong")
    assert not refused_auth(server.port, "default", password)


def test_disable_default_needs_another_admin(server: RedisServer) -> None:
    out = cli("acl", "protect-default", "--disable", "--redis-url", server.url)
    assert out.exit_code == 1 and "no other enabled user" in " ".join(out.stderr.split())
    assert not refused_auth(server.port, "default", "anything")  # unchanged: still open
    r = redis.Redis(port=server.port)
    acl(r, "ops", "on", ">ops-secret", "~*", "&*", "+@all")
    r.close()
    ops_url = f"redis://ops:ops-secret@127.0.0.1:{server.port}/0"
    out = cli("acl", "protect-default", "--disable", "--redis-url", ops_url, "--json")
    assert out.exit_code == 0 and json.loads(out.stdout)["disabled"] is True, out.output
    for pw in ("", "x", "nopass"):
        assert refused_auth(server.port, "default", pw)
    assert codes(ops_url)[0] == 0  # ops is an ACL admin: all keys and commands are its job


def test_acl_check_reports_each_weakness_and_is_clean_after_the_fix(secure_clean: Any) -> None:
    secure_redis = secure_clean
    url = secure_redis.admin_url
    assert cli("acl", "grant", "a1", "--team", "t1", "--redis-url", url).exit_code == 0
    assert cli("acl", "service", "--redis-url", url).exit_code == 0
    assert codes(url) == (0, [], [])
    r = secure_redis.admin_clients()[0]
    acl(r, "parked", "off", "nopass", "~*", "+@all")  # disabled: nobody can log in as it
    assert codes(url) == (0, [], [])
    weaknesses = [
        ("default-open", "default",
         lambda: acl(r, "default", "nopass"),
         lambda: acl(r, "default", "resetpass", f">{secure_redis.password}")),
        ("nopass", "bob",
         lambda: acl(r, "bob", "on", "nopass", "+ping"),
         lambda: r.acl_deluser("bob")),
        ("agent-drift", agent_username("a1"),
         lambda: acl(r, agent_username("a1"), "~bb:*"),
         lambda: cli("acl", "grant", "a1", "--team", "t1", "--redis-url", url)),
        ("agent-drift", agent_username("a1"),
         lambda: acl(r, agent_username("a1"), "+config|set"),
         lambda: cli("acl", "grant", "a1", "--team", "t1", "--redis-url", url)),
        ("agent-unrecorded", agent_username("ghost"),
         lambda: acl(r, agent_username("ghost"), "on", ">g", "+ping"),
         lambda: r.acl_deluser(agent_username("ghost"))),
        ("service-drift", "bb-service",
         lambda: acl(r, "bb-service", "+flushall"),
         lambda: cli("acl", "service", "--redis-url", url)),
        ("broad-user", "wide",
         lambda: acl(r, "wide", "on", ">w", "~*", "+get"),
         lambda: r.acl_deluser("wide")),
        ("broad-user", "allcmds",
         lambda: acl(r, "allcmds", "on", ">w", "~x", "+@all", "-acl"),
         lambda: r.acl_deluser("allcmds")),
        ("broad-user", "sel",  # read every key through a selector
         lambda: acl(r, "sel", "on", ">w", "~x", "+get", "(%R~* +get)"),
         lambda: r.acl_deluser("sel")),
        ("protected-mode-off", "protected-mode",
         lambda: r.config_set("protected-mode", "no") and r.config_set("bind", "* -::*"),
         lambda: r.config_set("bind", "127.0.0.1") and r.config_set("protected-mode", "yes")),
    ]
    try:
        for code, subject, make, undo in weaknesses:
            make()
            exit_code, found, findings = codes(url)
            assert exit_code == 3 and found == [code], (code, findings)
            assert findings[0]["subject"] == subject and findings[0]["remedy"]
            undo()
            assert codes(url) == (0, [], []), f"{code} still reported after the fix"
    finally:
        r.close()


def test_acl_check_reports_server_settings(tmp_path: Path) -> None:
    """Start-time settings: no aclfile; debug, module and protected-config commands on."""
    with RedisServer(data_dir=tmp_path / "a", extra_args=("--aclfile", "")) as srv:
        r = redis.Redis(port=srv.port)
        acl(r, "default", "resetpass", ">pw")
        r.close()
        assert codes(admin_url(srv, "pw"))[1] == ["no-aclfile"]
    with RedisServer(data_dir=tmp_path / "b", extra_args=(
            "--enable-debug-command", "yes", "--enable-module-command", "local",
            "--enable-protected-configs", "yes")) as srv:
        r = redis.Redis(port=srv.port)
        acl(r, "default", "resetpass", ">pw")
        r.close()
        assert codes(admin_url(srv, "pw"))[1] == [
            "enable-debug-command", "enable-module-command", "enable-protected-configs"]


@pytest.mark.cluster
def test_secure_cluster_every_node(secure_cluster_clean: Any) -> None:
    """On the 3-master cluster: closed on every node; one node reopened is reported by name;
    grants are saved on every node's aclfile."""
    secure_cluster = secure_cluster_clean
    url = secure_cluster.admin_url
    for port in secure_cluster.ports:
        assert refused_auth(port, "default", "x")
    out = cli("acl", "grant", "a1", "--redis-url", url, "--json")
    assert out.exit_code == 0, out.output
    assert codes(url) == (0, [], [])
    clients = secure_cluster.admin_clients()
    try:
        for c in clients:
            saved = c.execute_command("ACL", "LIST")  # what ACL SAVE wrote is what is loaded
            assert any(agent_username("a1") in (u.decode() if isinstance(u, bytes) else u)
                       for u in saved)
        acl(clients[1], "default", "nopass")
        _, found, findings = codes(url)
        assert found == ["default-open"] and len(findings) == 1
        assert findings[0]["node"].endswith(str(secure_cluster.ports[1]))
        grant = cli("acl", "grant", "a2", "--redis-url", url)
        assert grant.exit_code == 4, grant.output  # any open node refuses the grant
        acl(clients[1], "default", "resetpass", f">{secure_cluster.password}")
        assert codes(url)[0] == 0
    finally:
        for c in clients:
            c.close()
