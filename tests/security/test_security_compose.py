"""compose.yaml never runs Redis with an open default user.

Docker is not available here, so the redis service's own start-up script (its
``entrypoint``, with compose's ``$$`` escapes undone) runs under ``sh`` in front of a real
redis-server given the service's ``command``; only the paths (``/data``), the
listening address and the image's ``docker-entrypoint.sh`` (which only drops root) change.
"""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from blackboard.server import find_redis_server, free_port
from cli.app import app

pytestmark = pytest.mark.process  # the compose entrypoint under sh

ROOT = Path(__file__).resolve().parents[2]


def _interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's interpolation: ``${VAR:?msg}`` / ``${VAR:-default}`` / ``$$`` -> ``$``."""
    def var(m: re.Match[str]) -> str:
        name, op, arg = m.group(1), m.group(2), m.group(3)
        if env.get(name):
            return env[name]
        assert op != ":?", f"compose would refuse to start: {name} unset ({arg})"
        return arg or ""

    text = re.sub(r"(?<!\$)\$\{(\w+)(?:(:[?-])([^}]*))?\}", var, text)
    return text.replace("$$", "$")


def _auth(port: int, user: str, password: str) -> bytes:
    def bulk(x: str) -> bytes:
        b = x.encode()
        return b"$%d\r\n%s\r\n" % (len(b), b)

    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"*3\r\n" + bulk("AUTH") + bulk(user) + bulk(password))
        return s.recv(256)


def test_compose_redis_starts_with_the_default_user_protected(tmp_path: Path) -> None:
    doc = yaml.safe_load((ROOT / "compose.yaml").read_text())
    redis_svc = doc["services"]["redis"]
    password = "compose-" + os.urandom(8).hex()
    env = {"BLACKBOARD_REDIS_PASSWORD": password}
    assert "BLACKBOARD_REDIS_PASSWORD" in redis_svc["environment"]
    # every worker reaches Redis as the protected default user
    worker_url = _interpolate(doc["x-worker"]["environment"]["BLACKBOARD_REDIS_URL"], env)
    assert worker_url.startswith(f"redis://default:{password}@redis:")

    data = tmp_path / "data"
    data.mkdir()
    entry = [_interpolate(str(a), env) for a in redis_svc["entrypoint"]]
    assert entry[:2] == ["sh", "-c"]
    script = entry[2].replace("/data/", f"{data}/")
    assert 'exec docker-entrypoint.sh "$@"' in script  # the image's own entrypoint still runs
    script = script.replace('exec docker-entrypoint.sh "$@"', 'exec "$@"')
    command = [_interpolate(str(a), env).replace("/data/", f"{data}/")
               for a in redis_svc["command"]]
    assert command[0] == "redis-server" and "--aclfile" in command
    port = free_port()
    command = [find_redis_server(), *command[1:], "--port", str(port), "--bind", "127.0.0.1",
               "--dir", str(data), "--save", "", "--logfile", str(tmp_path / "log")]

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(["sh", "-c", script, entry[3], *command],
                                env={**os.environ, **env}, start_new_session=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return proc
            except OSError:
                assert proc.poll() is None, (tmp_path / "log").read_text()[-500:]
                time.sleep(0.05)
        raise AssertionError("redis did not start")

    proc = start()
    try:
        acl_file = data / "users.acl"
        assert stat.S_IMODE(acl_file.stat().st_mode) == 0o600
        assert password not in acl_file.read_text()  # only its sha256
        for wrong in ("", "x", "nopass"):
            assert _auth(port, "default", wrong).startswith(b"-WRONGPASS")
        assert _auth(port, "default", password) == b"+OK\r\n"
        url = f"redis://default:{password}@127.0.0.1:{port}/0"
        grant = CliRunner().invoke(app, ["acl", "grant", "a1", "--redis-url", url, "--json"])
        assert grant.exit_code == 0, grant.output
        agent_pw = json.loads(grant.stdout)["password"]
        check = CliRunner().invoke(app, ["acl", "check", "--redis-url", url, "--json"])
        assert check.exit_code == 0, check.output
    finally:
        proc.terminate()
        proc.wait(10)
    # a restart keeps the seeded file (not re-seeded) and the saved agent user
    env["BLACKBOARD_REDIS_PASSWORD"] = "another-" + password
    proc = start()
    try:
        assert _auth(port, "default", password) == b"+OK\r\n"
        assert _auth(port, "bb-agent-a1", agent_pw) == b"+OK\r\n"
    finally:
        proc.terminate()
        proc.wait(10)
