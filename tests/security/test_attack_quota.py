"""Issue 24, finding "no quota": an agent wrote 100 MB in 1.5 s with plain commands on keys
under its own prefix. Replayed by a confined agent: through the scripts the quota refuses
it (QuotaExceeded, nothing written past the limit); with raw commands on invented keys
(what Redis's ACL cannot stop: key patterns do not bound value sizes) `blackboard check`
reports them with their size and `--repair` removes them. The bound left: between two
checks, what Redis's `maxmemory` allows (docs/security.md "Quotas")."""

from __future__ import annotations

import time

import pytest
from support_attack import AttackEnv, Tally, attack_base, attack_env

from blackboard import ScopePolicy
from blackboard.errors import QuotaExceeded
from blackboard.keys import PartitionKeys, partition_of
from blackboard.quotas import OwnerQuota, owner_quota, set_owner_quota

__all__ = ["attack_base", "attack_env"]  # fixtures

AGENT = "q1"
MB = 1 << 20
QUOTA = 8 * MB


def _scopes(partitions: int, n: int) -> list[str]:
    """n scopes of the agent in one partition (an owner's quota holds per partition)."""
    names = [f"agent:{AGENT}:s{i}" for i in range(500)]
    p = partition_of(names[0], partitions)
    return [s for s in names if partition_of(s, partitions) == p][:n]


async def test_scripted_100mb_is_refused_by_the_quota(attack_env: AttackEnv) -> None:
    env = attack_env
    await set_owner_quota(env.admin, f"agent:{AGENT}", OwnerQuota(bytes=QUOTA))
    a = await env.agent(AGENT)
    t = Tally("quota: the agent raises its own limits")
    await t.attempt("set its own quota", set_owner_quota(a, f"agent:{AGENT}", OwnerQuota()))
    scope = _scopes(a.partitions, 1)[0]
    await t.attempt("raise its scope's byte quota",
                    a.client.hset(a.scope(scope).keys.cfg, "max_bytes", "0"))
    t.line()
    assert t.harmed == 0, t.escapes
    assert (await owner_quota(env.admin, f"agent:{AGENT}")).bytes == QUOTA

    scopes = _scopes(a.partitions, 4)
    value = "x" * (MB - 100)  # just under the 1 MiB entry limit, as JSON
    written = refused = 0
    t0 = time.perf_counter()
    for i in range(100):  # 100 MB offered
        s = a.scope(scopes[i % len(scopes)])
        try:
            await s.write(value)
            written += 1
        except QuotaExceeded as exc:
            refused += 1
            assert exc.quota == "agent_bytes" and exc.limit == QUOTA and not exc.never_fits
    took = time.perf_counter() - t0
    held = 0
    for s in scopes:
        held += int(await env.admin.client.hget(env.admin.scope(s).keys.usage, "bytes") or 0)
    print(f"quota: scripted 100 MB: written {written} / refused {refused} in {took:.2f} s, "
          f"held {held} bytes (quota {QUOTA})")
    assert written == QUOTA // MB  # each entry holds MB - 92 bytes (JSON quotes, '{}', '[]')
    assert held <= QUOTA and refused == 100 - written
    assert sum([await a.scope(s).count() for s in scopes]) == written  # nothing half-written


async def test_a_scope_byte_quota_and_the_single_entry_that_never_fits(
    attack_env: AttackEnv,
) -> None:
    env = attack_env
    a = await env.agent(AGENT)
    scope = _scopes(a.partitions, 1)[0]
    await env.admin.scope(scope).set_policy(ScopePolicy(max_bytes=MB))
    await a.scope(scope).write("x" * (MB // 2))
    with pytest.raises(QuotaExceeded) as full:
        await a.scope(scope).write("y" * (MB // 2))
    assert not full.value.never_fits  # REST 507
    await env.admin.scope(scope).set_policy(ScopePolicy(max_bytes=1000))
    with pytest.raises(QuotaExceeded) as never:
        await a.scope(scope).write("z" * 2000)
    assert never.value.never_fits  # REST 413
    assert await a.scope(scope).count() == 1


async def test_raw_100mb_on_invented_keys_is_found_and_removed(attack_env: AttackEnv) -> None:
    env = attack_env
    a = await env.agent(AGENT)
    scope = _scopes(a.partitions, 1)[0]
    await a.scope(scope).write("legit")
    base = PartitionKeys(partition_of(scope, a.partitions)).base
    junk = [f"{base}:s:agent:{AGENT}:stash{i}" for i in range(5)]
    junk += [f"{a.scope(scope).keys.prefix}blob{i}" for i in range(5)]
    blob = b"\0" * (10 * MB)
    t0 = time.perf_counter()
    for k in junk:  # HSET and SADD are granted too; a hash field of 10 MB is the same
        await a.client.hset(k, "x", blob)
    took = time.perf_counter() - t0
    report = await env.admin.check()
    found = {d.member: d.problem for d in report.drift if d.index == "invented"}
    assert set(found) == set(junk) and not report.ok
    sizes = [int(p.split(" of ")[1].split()[0]) for p in found.values()]
    assert all(s >= 10 * MB for s in sizes)
    t1 = time.perf_counter()
    await env.admin.check(repair=True)
    repair_s = time.perf_counter() - t1
    assert await env.admin.client.exists(*junk) == 0
    assert await a.scope(scope).count() == 1
    assert (await env.admin.check()).ok
    print(f"quota: raw {len(junk) * 10} MB on invented keys in {took:.2f} s; check found "
          f"{len(found)} keys, {sum(sizes)} bytes; --repair removed them in {repair_s:.2f} s")
