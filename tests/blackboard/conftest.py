"""Fixtures of the substrate tests: Redis snapshots and a board on single Redis or a cluster."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis
from redis_snapshot import Snapshot
from redis_snapshot import snapshot_of as _snapshot

from blackboard import Blackboard, Scope


@pytest.fixture(params=["single", pytest.param("cluster", marks=pytest.mark.cluster)])
def board(request: pytest.FixtureRequest) -> Blackboard:
    """The same test on one Redis (``bb``) and on the 3-master cluster (``cbb``)."""
    name = "bb" if request.param == "single" else "cbb"
    b: Blackboard = request.getfixturevalue(name)
    return b


async def _scope_state(scope: Scope) -> dict[str, Any]:
    """Every index of a scope read back raw: what the invariants are checked against."""
    c, k = scope.bb.client, scope.keys
    tag_counts = {t.decode(): int(n) for t, n in (await c.hgetall(k.tags)).items()}
    tag_sets = {}
    for t in tag_counts:
        tag_sets[t] = {m.decode() for m in await c.smembers(k.tag_set(t))}
    return {
        "ix": {m.decode() for m in await c.zrange(k.ix, 0, -1)},
        "tags": tag_counts,
        "tag_sets": tag_sets,
        "keys": {a.decode(): b.decode() for a, b in (await c.hgetall(k.keys)).items()},
        "exp": {m.decode() for m in await c.zrange(k.exp, 0, -1)},
        "evict": {m.decode() for m in await c.zrange(k.evict, 0, -1)},
    }


@pytest.fixture()
def scope_state() -> Callable[[Scope], Awaitable[dict[str, Any]]]:
    """``await scope_state(scope)`` -> raw index contents (ix, tags, tag_sets, keys, exp, evict)."""
    return _scope_state


async def _assert_consistent(scope: Scope) -> None:
    """The counter hash equals the real tag-set cardinalities; every index member is live."""
    st = await _scope_state(scope)
    c, k = scope.bb.client, scope.keys
    for t, n in st["tags"].items():
        assert n == len(st["tag_sets"][t]) > 0, t
    for t, members in st["tag_sets"].items():
        assert members <= st["ix"], t
    assert st["evict"] == st["ix"]
    assert st["exp"] <= st["ix"]
    assert set(st["keys"].values()) <= st["ix"]
    # No tag set exists without its counter (a stray set would be a leak).
    for m in st["ix"]:
        e = await c.hgetall(k.entry(m))
        assert e, m
        for t in json.loads(e[b"tags"]):
            assert m in st["tag_sets"][t]


@pytest.fixture()
def assert_consistent() -> Callable[[Scope], Awaitable[None]]:
    return _assert_consistent


@pytest.fixture()
def snapshot_of() -> Callable[[redis.Redis], Snapshot]:
    """``snapshot_of(client)`` -> {key: DUMP} of that Redis."""
    return _snapshot
