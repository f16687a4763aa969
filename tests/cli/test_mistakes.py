"""Issue 16: every user mistake is one line on stderr with a documented exit code
(2 usage, 1 runtime, 4 permission), no traceback (unless --debug), no password."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from cli_support import SECRET, cli

from blackboard import Blackboard
from blackboard.redact import mask_url
from memory import AgentMemory

pytestmark = pytest.mark.process  # the CLI as a process (cli_support.cli)


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def _with_password(url: str, user: str, password: str) -> str:
    return url.replace("redis://", f"redis://{user}:{password}@", 1)


@pytest.fixture()
def seeded(redis_url: str, clean_redis: redis.Redis) -> str:
    """Agent a1 (team t1) with three working entries."""
    async def seed() -> None:
        async with Blackboard.connect(redis_url) as bb, \
                AgentMemory(bb, "a1", teams=["t1"], default_retriever=False) as m:
            await m.install_default_hierarchy()
            for t in ("the build failed on step three", "Bob likes chess", "deploy done"):
                await m.store({"text": t, "n": 1}, tags={"note"})

    asyncio.run(seed())
    return redis_url


@pytest.fixture()
def acl_user(clean_redis: redis.Redis) -> Iterator[str]:
    """A Redis user with a password that may connect but not read the buses."""
    clean_redis.execute_command("ACL", "SETUSER", "d16-user", "on", f">{SECRET}", "~*", "&*",
                                "+@all", "-xlen", "-xinfo", "-scard")
    yield "d16-user"
    clean_redis.execute_command("ACL", "DELUSER", "d16-user")


def test_url_without_scheme_is_usage() -> None:
    r = cli("stats", "--redis-url", f"user:{SECRET}@localhost:6391")
    line = r.one_line_error(2)
    assert "no scheme" in line and "redis://" in line


def test_no_url_is_usage() -> None:
    assert "BLACKBOARD_REDIS_URL" in cli("stats").one_line_error(2)


def test_refused_login_says_refused_and_masks_password(redis_url: str, acl_user: str) -> None:
    r = cli("stats", "--redis-url", _with_password(redis_url, acl_user, "wrong" + SECRET))
    line = r.one_line_error(4)
    assert "refused the login" in line and "cannot reach" not in line


def test_redis_denied_command_is_permission(redis_url: str, acl_user: str) -> None:
    r = cli("stats", "--redis-url", _with_password(redis_url, acl_user, SECRET))
    line = r.one_line_error(4)
    assert "denied" in line and "NoPermissionError" not in line


def test_unreachable_redis_is_runtime() -> None:
    line = cli("stats", "--redis-url", f"redis://u:{SECRET}@127.0.0.1:1/0").one_line_error(1)
    assert "cannot reach" in line and "u:***@" in line


def test_unknown_lens_and_level_are_usage(seeded: str) -> None:
    line = cli("recall", "x", "--agent", "a1", "--lens", "bogus", url=seeded).one_line_error(2)
    assert "unknown lens 'bogus'" in line and "failures" in line
    line = cli("recall", "x", "--agent", "a1", "--level", "ltm", url=seeded).one_line_error(2)
    assert "unknown memory level 'ltm'" in line and "working" in line
    line = cli("recall", "x", "--agent", "a1", "--consistency", "eventual",
               url=seeded).one_line_error(2)
    assert "unknown consistency 'eventual'" in line and "semantic" in line


def test_bad_as_of_is_usage(seeded: str) -> None:
    """Issue 25: an ``--as-of`` in the future or unparsable is one line, nothing read."""
    for bad, says in (("2999-01-01", "in the future"), ("last tuesday", "valid datetime")):
        line = cli("recall", "x", "--agent", "a1", "--as-of", bad, url=seeded).one_line_error(2)
        assert "--as-of" in line and says in line


def test_unknown_agent_says_so(seeded: str) -> None:
    for cmd in (("recall", "x"), ("map",)):
        line = cli(*cmd, "--agent", "nobody", url=seeded).one_line_error(1)
        assert "no memory for agent 'nobody'" in line
    assert cli("map", "--agent", "a1", url=seeded).code == 0


def test_unknown_and_malformed_scope(seeded: str) -> None:
    t0 = time.monotonic()
    line = cli("tail", "foo", "--limit", "1", url=seeded, timeout=30).one_line_error(1)
    assert "unknown scope 'foo'" in line and time.monotonic() - t0 < 30
    assert "scope id" in cli("tail", "bad scope!", url=seeded).one_line_error(2)


def test_bad_option_values_are_usage(redis_url: str) -> None:
    assert "always, everysec, no" in cli("server", "--appendfsync", "sometimes").one_line_error(2)
    assert "at least 1" in cli("demo", "--agents", "0", "--steps", "1", "--no-workers",
                               url=redis_url, timeout=30).one_line_error(2)
    assert "unknown role" in cli("worker", "--role", "bogus", url=redis_url).one_line_error(2)
    assert "--limit" in cli("tail", "agent:a1:working", "--limit", "0",
                            url=redis_url).one_line_error(2)


def test_server_port_in_use_names_it(redis_url: str, tmp_path: Path) -> None:
    port = _port(redis_url)
    r = cli("server", "--port", str(port), "--data-dir", str(tmp_path / "d"), timeout=30)
    line = r.one_line_error(1)
    assert f"port {port} is already in use" in line and "redis-server stopped" not in r.out
    assert "ready" not in r.out


def test_server_unusable_data_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    line = cli("server", "--port", "0", "--data-dir", str(blocker / "redis")).one_line_error(1)
    assert "data directory" in line and str(blocker) in line


def test_debug_shows_the_traceback() -> None:
    for r in (cli("--debug", "stats", "--redis-url", "localhost:1"),
              cli("stats", "--redis-url", "localhost:1", BLACKBOARD_DEBUG="1")):
        assert r.code != 0 and "Traceback" in r.err and "InvalidArgument" in r.err


def test_mask_url_keeps_user_hides_password() -> None:
    assert mask_url(f"redis://bb-agent-a3:{SECRET}@127.0.0.1:6391/0") == \
        "redis://bb-agent-a3:***@127.0.0.1:6391/0"
    assert mask_url(f"redis://h:1/0?password={SECRET}&db=1") == "redis://h:1/0?password=***&db=1"
    assert mask_url(f"u:{SECRET}@host:1") == "u:***@host:1"
    assert mask_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


def test_confined_agent_on_another_agents_memory_is_permission(seeded: str) -> None:
    from blackboard.acl import AclAdmin
    from memory.access import provision_agent

    async def grant() -> str:
        async with Blackboard.connect(seeded) as bb:
            g = await AclAdmin(bb).grant("a2", ["t2"], password=SECRET)
            await provision_agent(bb, "a2", ["t2"])
            return g.username

    user = asyncio.run(grant())
    try:
        url = _with_password(seeded, user, SECRET)
        for cmd in (("recall", "build", "--agent", "a1"), ("stats",)):
            line = cli(*cmd, url=url).one_line_error(4)
            assert "denied" in line or "may not" in line, line
        assert cli("map", "--agent", "a2", "--team", "t2", "--json", url=url).code == 0
    finally:
        r = redis.Redis.from_url(seeded)
        r.execute_command("ACL", "DELUSER", user)
        r.close()
