"""`blackboard quota show|set` and `blackboard check`'s lines on stray keys (issue 24)."""

from __future__ import annotations

import pytest
import redis
from cli_support import cli

pytestmark = pytest.mark.process  # the CLI as a process (cli_support.cli)


def test_quota_set_show_and_a_bad_owner(redis_url: str, clean_redis: redis.Redis) -> None:
    r = cli("quota", "set", "agent:a1", "--bytes", "4096", "--redis-url", redis_url)
    assert r.code == 0 and "agent:a1: 1000000 entries, 4096 bytes" in r.out
    r = cli("quota", "show", "agent:a1", "--json", "--redis-url", redis_url)
    assert r.code == 0 and '"bytes": 4096' in r.out
    line = cli("quota", "set", "collective", "--bytes", "1", "--redis-url",
               redis_url).one_line_error(2)
    assert "agent:<id> or team:<id>" in line


def test_check_names_an_invented_key(redis_url: str, clean_redis: redis.Redis) -> None:
    clean_redis.set("bb:{p0}:s:agent:a1:stash", "x" * 5000)
    r = cli("check", "--redis-url", redis_url)
    assert r.code == 3
    assert "invented 'bb:{p0}:s:agent:a1:stash': a string of" in r.out
    assert "agent:a1 holds 1 key(s)" in r.out
    assert cli("check", "--repair", "--redis-url", redis_url).code == 0
    assert clean_redis.exists("bb:{p0}:s:agent:a1:stash") == 0
