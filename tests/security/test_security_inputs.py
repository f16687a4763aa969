"""Hypothesis inputs: every scope id, tag, key, metadata, value and CLI argument either
succeeds or fails with the documented error, and a failure leaves Redis unchanged."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis_snapshot import snapshot_of
from typer.testing import CliRunner

from blackboard import Blackboard, BlackboardError, InvalidArgument
from cli.app import app

_ODD = st.text(alphabet=st.characters(codec="utf-8"), max_size=300) | st.sampled_from(
    ["", "a" * 5000, "a{b}", "x*", "\x00", "a b", "\udcff", "agent:a:working", "team:t"])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=50),
    lambda ch: st.lists(ch, max_size=4) | st.dictionaries(st.text(max_size=10), ch, max_size=4),
    max_leaves=40,
)
_DEEP: Any = 0
for _ in range(60):
    _DEEP = [_DEEP]
_SETTINGS = settings(max_examples=60, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])


@_SETTINGS
@given(scope=_ODD, tags=st.lists(_ODD, max_size=4), key=st.none() | _ODD,
       metadata=st.none() | _JSON | st.just({"deep": _DEEP}),
       value=_JSON | st.just(_DEEP) | st.binary(max_size=20) | st.just("v" * 2_000_000))
def test_write_inputs(clean_redis: redis.Redis, redis_url: str, scope: str, tags: list[str],
                      key: str | None, metadata: Any, value: Any) -> None:
    async def go() -> None:
        async with Blackboard.connect(redis_url, partitions=8) as bb:
            before = snapshot_of(clean_redis)
            try:
                s = bb.scope(scope)
                e = await s.write(value, tags=tags, key=key,
                                  metadata=metadata if isinstance(metadata, dict) else None)
            except InvalidArgument:
                assert snapshot_of(clean_redis) == before
                return
            assert (await s.get(e.id)).id == e.id

    asyncio.run(go())


@_SETTINGS
@given(all_of=st.lists(_ODD, max_size=3), none_of=st.lists(_ODD, max_size=3),
       limit=st.none() | st.integers(-5, 5) | st.just(True))
def test_query_inputs(clean_redis: redis.Redis, redis_url: str, all_of: list[str],
                      none_of: list[str], limit: Any) -> None:
    async def go() -> None:
        async with Blackboard.connect(redis_url, partitions=8) as bb:
            await bb.scope("agent:a:working").write(1, tags={"x"})
            before = snapshot_of(clean_redis)
            with contextlib.suppress(InvalidArgument):
                await bb.scope("agent:a:working").entries(all_of=all_of, none_of=none_of,
                                                          limit=limit)
            assert snapshot_of(clean_redis) == before  # a read never writes

    asyncio.run(go())


@_SETTINGS
@given(args=st.lists(_ODD.filter(lambda s: "\x00" not in s and "\udcff" not in s),
                     min_size=1, max_size=3),
       cmd=st.sampled_from([["acl", "grant"], ["acl", "revoke"], ["check", "--scope"]]))
def test_cli_arguments(secure_clean: Any, args: list[str], cmd: list[str]) -> None:
    # secure mode: `acl grant` refuses every agent while the default user is open
    redis_url = secure_clean.admin_url
    clean_redis = secure_clean.admin_clients()[0]

    async def pin() -> None:  # connecting pins bb:config on an empty Redis: do it first
        async with Blackboard.connect(redis_url):
            pass

    asyncio.run(pin())
    before = snapshot_of(clean_redis)
    out = CliRunner().invoke(app, [*cmd, *args, "--redis-url", redis_url, "--json"])
    assert out.exit_code in (0, 1, 2, 3), (out.exit_code, out.output, repr(out.exception))
    if not isinstance(out.exception, SystemExit | type(None)):
        assert isinstance(out.exception, BlackboardError), repr(out.exception)
    if out.exit_code != 0:
        assert snapshot_of(clean_redis) == before
    clean_redis.flushall()
    for u in clean_redis.acl_users():
        if u.startswith("bb-agent-"):
            clean_redis.acl_deluser(u)
    clean_redis.close()
