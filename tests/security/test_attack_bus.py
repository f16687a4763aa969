"""Issue 12, findings 1 and 2, replayed verbatim by a confined agent A against agent C, which
shares A's partition: A cannot trim, block or flood-delete the bus (it holds no permission on
it), and forged or replayed events pushed where A may push (the partition inbox; the bus
itself on the code before) never produce a second output in C's memory.

A real ``summarize`` worker (identity and summarize edges, triggers made quick) consumes.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from support_attack import (
    AttackEnv,
    Tally,
    any_base,
    any_env,
    attack_base,
    attack_cluster_base,
    neighbour,
    partition_key,
)
from support_lifecycle import (
    QUICK,
    QUICK_TRIGGERS,
    Procs,
    drained,
    exactly_once,
    ledger,
    set_triggers,
    state,
    wait_done,
    write_steps,
)

from blackboard.ids import new_ulid
from blackboard.keys import PartitionKeys, partition_of
from memory.hierarchy import install_default_hierarchy

pytestmark = pytest.mark.process  # worker processes (support_lifecycle.Procs)

__all__ = ["any_base", "any_env", "attack_base", "attack_cluster_base"]  # fixtures

VICTIM = "c"
ATTACKER = neighbour(VICTIM)
EXHAUSTED = "18446744073709551615-18446744073709551615"


async def _setup(env: AttackEnv) -> tuple[object, PartitionKeys]:
    for agent in (VICTIM, ATTACKER):
        await install_default_hierarchy(env.admin, agent)
    await set_triggers(env.admin, {k: QUICK_TRIGGERS[k] for k in ("identity", "summarize")})
    await env.admin.ensure_groups(["summarize"])  # the worker ran before; it is down now
    a = await env.agent(ATTACKER)
    part = PartitionKeys(partition_of(f"agent:{VICTIM}:working", env.admin.partitions))
    assert partition_of(f"agent:{ATTACKER}:working", env.admin.partitions) == part.partition
    return a, part


#: What the summarize worker serves; other roles' groups (made by the edges' install) stay
#: unread here, on purpose: no worker of theirs runs in these tests.
SERVED = ("summarize",)
EDGES = ("summarize", "identity")


async def _idle(env: AttackEnv) -> bool:
    return await drained(env.admin, SERVED, EDGES)


async def _consolidated(env: AttackEnv, written: list[str]) -> tuple[int, int]:
    led = await ledger(env.admin, VICTIM)
    lost = twice = 0
    for seen in (led.identity, led.summarize):
        lo, tw, fo = exactly_once(written, seen)
        assert fo == 0
        lost, twice = lost + lo, twice + tw
    return lost, twice


async def test_agent_cannot_trim_block_or_delete_the_bus(
    any_env: AttackEnv, tmp_path: Path
) -> None:
    env = any_env
    a, part = await _setup(env)
    c = await env.agent(VICTIM)
    written = await write_steps(c, VICTIM, 30, chunk=10)  # 30 pending for the worker
    t = Tally("bus: trim / block / delete another agent's events")
    cl = a.client  # type: ignore[attr-defined]
    bus = part.bus
    tries = [
        ("XADD MAXLEN 0", ("XADD", bus, "MAXLEN", "0", "*", "x", "y")),
        ("XADD MAXLEN = 0", ("XADD", bus, "MAXLEN", "=", "0", "*", "x", "y")),
        ("XADD MAXLEN ~ 0 LIMIT", ("XADD", bus, "MAXLEN", "~", "0", "LIMIT", "100", "*", "x",
                                   "y")),
        ("XADD MINID", ("XADD", bus, "MINID", "99999999999999", "*", "x", "y")),
        ("XADD MINID ~", ("XADD", bus, "MINID", "~", "99999999999999", "*", "x", "y")),
        ("XADD NOMKSTREAM MAXLEN 0", ("XADD", bus, "NOMKSTREAM", "MAXLEN", "0", "*", "x",
                                      "y")),
        ("XADD exhausted id", ("XADD", bus, EXHAUSTED, "x", "y")),
        ("XADD explicit id", ("XADD", bus, "99999999999999-0", "x", "y")),
        ("XTRIM MAXLEN 0", ("XTRIM", bus, "MAXLEN", "0")),
        ("XTRIM MINID", ("XTRIM", bus, "MINID", "99999999999999")),
        ("XDEL", ("XDEL", bus, "0-1")),
        ("DEL bus", ("DEL", bus)),
        ("UNLINK bus", ("UNLINK", bus)),
        ("XSETID", ("XSETID", bus, EXHAUSTED)),
        ("XGROUP DESTROY", ("XGROUP", "DESTROY", bus, "summarize")),
        ("XGROUP SETID", ("XGROUP", "SETID", bus, "summarize", "$")),
        ("XACK", ("XACK", bus, "summarize", "0-1")),
        ("XAUTOCLAIM", ("XAUTOCLAIM", bus, "summarize", "a", "0", "0-0")),
        ("RENAME bus", ("RENAME", bus, f"{bus}:x")),
        ("EXPIRE bus", ("EXPIRE", bus, "1")),
    ]
    for key in ("inbox", "relaying"):
        k = partition_key(part, key)
        tries += [
            (f"DEL {key}", ("DEL", k)), (f"LTRIM {key}", ("LTRIM", k, "1", "0")),
            (f"LPOP {key}", ("LPOP", k, "100")), (f"RPOP {key}", ("RPOP", k, "100")),
            (f"LREM {key}", ("LREM", k, "0", "x")), (f"LSET {key}", ("LSET", k, "0", "x")),
            (f"LMOVE {key}", ("LMOVE", k, k, "LEFT", "RIGHT")),
            (f"EXPIRE {key}", ("EXPIRE", k, "1")),
        ]
    for what, cmd in tries:
        await t.attempt(what, cl.execute_command(*cmd))
    # C keeps writing after the exhausted-id attempt: nothing blocks its partition.
    try:
        written += await write_steps(c, VICTIM, 10, chunk=10, first=30)
    except Exception as exc:
        t.escapes.append(f"C's write after the attacks failed: {exc!r:.160}")
        t.harmed += 1
    procs = Procs(env.admin_url, tmp_path)
    try:
        procs.start("summarize", QUICK)

        async def done() -> bool:
            return await _consolidated(env, written) == (0, 0) and await _idle(env)

        await wait_done(env.admin, done, 90, only=SERVED, edges=EDGES)
        lost, twice = await _consolidated(env, written)
    finally:
        procs.close()
    t.harmed += lost + twice
    line = t.line()
    print(f"  C's entries: {len(written)} written, {lost} never consolidated, {twice} twice")
    assert t.harmed == 0, (line, t.escapes, await state(env.admin))
    assert t.refused == t.tries


async def test_forged_and_replayed_events_never_make_a_second_output(
    any_env: AttackEnv, tmp_path: Path
) -> None:
    env = any_env
    a, part = await _setup(env)
    c = await env.agent(VICTIM)
    written = await write_steps(c, VICTIM, 20, chunk=20)
    procs = Procs(env.admin_url, tmp_path)
    try:
        procs.start("summarize", QUICK)

        async def done() -> bool:
            return await _consolidated(env, written) == (0, 0) and await _idle(env)

        finished = await wait_done(env.admin, done, 90, only=SERVED, edges=EDGES)
        assert finished, await state(env.admin)
        stm = env.admin.scope(f"agent:{VICTIM}:stm")
        outputs_before = await stm.count()
        # What A pushes: replays and copies of C's real items, versions C never wrote,
        # ids that do not exist, C's stm entries, junk. On the code before issue 12 the
        # agent could not push to an inbox but could XADD the bus: copies of the real bus
        # events go there too.
        stm_ids = [e.id for e in await stm.entries(limit=None)]
        items = (
            [f"agent:{VICTIM}:working|{i}|1" for i in written] * 2
            + [f"agent:{VICTIM}:working|{i}|{v}" for i in written[:5] for v in (0, 2, 99)]
            + [f"agent:{VICTIM}:working|{new_ulid()}|1" for _ in range(5)]
            + [f"agent:{VICTIM}:stm|{i}|1" for i in stm_ids[:5]]
            + [f"agent:{ATTACKER}:stm|{i}|1" for i in written[:5]]
            + ["junk", "a|b", "||", f"agent:{VICTIM}:working|{written[0]}|x"]
        )
        t = Tally("replay: forged and replayed events naming C's entries")
        cl = a.client  # type: ignore[attr-defined]
        for item in items:
            t.tries += 1
            try:
                await cl.rpush(partition_key(part, "inbox"), item)
            except Exception as exc:
                assert "NOPERM" in str(exc) or "no permissions" in str(exc).lower(), exc
                t.refused += 1
        events = await env.admin.client.xrange(part.bus)
        real = [f for _id, f in events if f.get(b"scope") == f"agent:{VICTIM}:working".encode()]
        for fields in real * 2:
            t.tries += 1
            try:
                await cl.xadd(part.bus, fields)
            except Exception as exc:
                assert "NOPERM" in str(exc) or "no permissions" in str(exc).lower(), exc
                t.refused += 1
        await asyncio.sleep(3)  # relay, consume, and an age trigger of 0.5 s: ample
        await wait_done(env.admin, lambda: _idle(env), 60, only=SERVED, edges=EDGES)
        lost, twice = await _consolidated(env, written)
        outputs_after = await stm.count()
        led = await ledger(env.admin, VICTIM)
        attacker_stm = await env.admin.scope(f"agent:{ATTACKER}:stm").count()
    finally:
        procs.close()
    t.harmed = twice + lost + (outputs_after - outputs_before) + attacker_stm
    line = t.line()
    print(f"  C's stm: {outputs_before} -> {outputs_after} entries; sources twice {twice}; "
          f"identity {sum(led.identity.values())}, summarize {sum(led.summarize.values())}; "
          f"outputs in A's stm {attacker_stm}")
    assert t.harmed == 0, (line, await state(env.admin))
    assert Counter(led.identity) == Counter(set(written))
