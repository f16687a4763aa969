"""A scope's limits are stored once (the cfg hash the write script reads); the registry
talks over the Blackboard's own connection pool."""

from __future__ import annotations

import redis

from blackboard import Blackboard, ScopePolicy
from blackboard import keys as K
from memory import MemoryLevel, Registry, default_config

SCOPE = "agent:a1:stm"


async def test_limits_live_in_the_cfg_hash_only(bb: Blackboard, clean_redis: redis.Redis) -> None:
    reg = Registry(bb)
    cfg = default_config(SCOPE, max_entries=7, ttl=60.0, decay_rate=0.3)
    saved = await reg.register_scope(cfg)
    assert saved.limits == cfg.limits and saved.level is MemoryLevel.STM
    record = {k.decode() for k in clean_redis.hgetall(K.scope_record(SCOPE))}
    assert record == {"pk", "scope_id", "kind", "owner", "level", "created_at"}
    # The truth is what the script enforces: a change there is what the registry reports.
    await bb.scope(SCOPE).set_policy(ScopePolicy(max_entries=3, on_full="reject"))
    got = await reg.get_scope(SCOPE)
    assert got is not None and (got.limits.max_entries, got.limits.on_full) == (3, "reject")
    assert got.limits.ttl is None and got.created_at == saved.created_at
    assert (await reg.get_scopes([SCOPE, "team:none"])) == {SCOPE: got}
    assert await reg.list_scopes() == [got]
    # A record written before, with the limits copied in, reads the same: the copy is
    # ignored.
    clean_redis.hset(K.scope_record(SCOPE), mapping={"max_entries": 99, "ttl": 5.0})
    assert await reg.get_scope(SCOPE) == got


async def test_registry_shares_the_blackboards_pool(bb: Blackboard) -> None:
    reg = Registry(bb)
    assert reg.records is bb.records
    assert bb.records.Scope._meta.database is bb.client
    assert bb.records.Edge._meta.database is bb.client
    await reg.ensure_scope(SCOPE)
    await reg.aclose()  # the Blackboard owns the connection: it stays usable
    assert await bb.scope(SCOPE).count() == 0
    assert (await Registry(bb).get_scope(SCOPE)) is not None
