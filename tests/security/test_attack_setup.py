"""Issue 12, findings 3, 4 and 5, replayed by a confined agent.

3. ``AUTH default <anything>`` from an agent's connection is refused once the default user is
   protected (secure mode), and the agent stays itself (``ACL WHOAMI``).
4. Each of the agent's own keys turned into the wrong type, and its own feed's id exhausted:
   a write fails and nothing is half-written (the whole Redis byte-identical), a retry with
   the same id after the damage is undone is published; ``blackboard check`` reports an
   entry without its event made by hand, and repairs it.
5. One agent's hierarchy install and ``acl grant`` leave an operator's trigger as configured;
   the agent cannot touch the edge registry, the buffers or the edges version.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from dataclasses import replace
from typing import Any

import pytest
from redis import exceptions as rexc
from redis_snapshot import Snapshot
from support_attack import (
    AttackEnv,
    Tally,
    any_base,
    any_env,
    attack_base,
    attack_cluster_base,
    attack_cluster_env,
    attack_env,
    neighbour,
    partition_key,
    raw,
)

from blackboard import Blackboard, WriteRequest
from blackboard.ids import new_ulid
from blackboard.keys import EDGE_RECORDS, PartitionKeys, edge_record
from memory.hierarchy import default_edges, install_default_hierarchy
from memory.registry import Registry
from memory.subscriptions import MemorySubscription, Trigger

__all__ = ["any_base", "any_env", "attack_base", "attack_cluster_base",  # fixtures
           "attack_cluster_env", "attack_env"]

VICTIM = "c"
ATTACKER = neighbour(VICTIM)
EXHAUSTED = "18446744073709551615-18446744073709551615"


# -- 3. the default user ---------------------------------------------------------------------


async def _auth_default(env: AttackEnv, name: str) -> Tally:
    victim = await env.agent(VICTIM)
    secrets_ = [await victim.scope(f"agent:{VICTIM}:working").write({"secret": i})
                for i in range(12)]
    a = await env.agent(ATTACKER)
    kw = a.client.get_connection_kwargs() if env.admin.cluster else \
        a.client.connection_pool.connection_kwargs
    user, pw = kw["username"], kw["password"]
    sk = env.admin.scope(f"agent:{VICTIM}:working").keys
    t = Tally(name)
    ports = [r.connection_pool.connection_kwargs["port"] for r in env.nodes]
    for port in ports:
        for attempt in (("AUTH", "default", "x"), ("AUTH", "default", ""), ("AUTH", "x"),
                        ("HELLO", "2", "AUTH", "default", "x"), ("AUTH", "default", "nopass")):
            reply = (await raw("127.0.0.1", port, ("AUTH", user, pw), attempt,
                               ("ACL", "WHOAMI"),
                               *(("HGET", sk.entry(e.id), "value") for e in secrets_)))
            assert reply[0] == b"+OK", reply
            t.tries += 1
            refused = reply[1].startswith((b"-WRONGPASS", b"-ERR", b"-NOPERM", b"-AUTH"))
            t.refused += refused
            # Harm: the connection is someone else now, or it can read C's entries (on a
            # cluster, C's keys are on one node; elsewhere they answer MOVED, not data).
            leaked = sum(1 for r in reply[3:] if r and not r.startswith(b"-"))
            if not refused or reply[2] != user.encode() or leaked:
                t.harmed += 1
                t.escapes.append(f"{attempt}: {reply[1]!r} whoami {reply[2]!r}, "
                                 f"{leaked} of C's entries read")
    return t


async def test_auth_default_refused_once_protected(attack_env: AttackEnv) -> None:
    t = await _auth_default(attack_env, "auth: AUTH default from an agent's connection")
    line = t.line()
    assert attack_env.secure, "no secure-mode fixture: the default user is open"
    assert t.harmed == 0, (line, t.escapes)


async def test_auth_default_refused_on_the_cluster(attack_cluster_env: AttackEnv) -> None:
    t = await _auth_default(attack_cluster_env, "auth (cluster): AUTH default, each node")
    line = t.line()
    assert attack_cluster_env.secure, "no secure-mode fixture: the default user is open"
    assert t.harmed == 0, (line, t.escapes)


# -- 4. all-or-nothing scripts ---------------------------------------------------------------


def _restore(env: AttackEnv, snap: Snapshot) -> None:
    """Put every key back as it was in ``snap`` (admin)."""
    for r in env.nodes:
        for k in list(r.scan_iter(count=1000)):
            if k not in snap:
                r.delete(k)
        for k, d in snap.items():
            # On a cluster a key lives on one node: the others answer MOVED.
            with contextlib.suppress(rexc.MovedError):
                r.restore(k, 0, d, replace=True)


async def _damages(a: Blackboard, scope: str, entry_id: str) -> list[tuple[str, list[Any]]]:
    sk = a.scope(scope).keys
    other_type = {"zset": ("HSET", "f", "v"), "hash": ("ZADD", "1", "m"),
                  "set": ("HSET", "f", "v"), "stream": ("HSET", "f", "v")}
    out: list[tuple[str, list[Any]]] = []
    for what, key, kind in (("ix", sk.ix, "zset"), ("tags", sk.tags, "hash"),
                            ("keys", sk.keys, "hash"), ("exp", sk.exp, "zset"),
                            ("evict", sk.evict, "zset"), ("feed", sk.feed, "stream"),
                            ("tag set", sk.tag_set("x"), "set"),
                            ("entry hash of the id", sk.entry(entry_id), "hash")):
        cmd, *args = other_type[kind]
        if what == "entry hash of the id":
            cmd, args = "SADD", ["m"]
        out.append((f"{what} as the wrong type", [("DEL", key), (cmd, key, *args)]))
    out.append(("feed id exhausted", [("XADD", sk.feed, EXHAUSTED, "x", "y")]))
    return out


async def test_wrong_types_and_exhausted_feed_leave_nothing_half_written(
    any_env: AttackEnv,
) -> None:
    env = any_env
    a = await env.agent(ATTACKER)
    scope = f"agent:{ATTACKER}:working"
    s = a.scope(scope)
    await s.write_many([WriteRequest({"n": i}, tags={"x"}, key=f"k{i}", ttl=600)
                        for i in range(5)])
    clean = env.snapshot()
    t = Tally("atomic: wrong types / exhausted feed on the agent's own keys")
    entry_id = new_ulid()
    req = WriteRequest({"n": "new"}, tags={"x", "y"}, key="k9", ttl=600, entry_id=entry_id)
    for what, cmds in await _damages(a, scope, entry_id):
        for cmd in cmds:
            await a.client.execute_command(*cmd)  # its own keys: allowed
        damaged = env.snapshot()
        for op in ("write", "write_many"):
            t.tries += 1
            try:
                if op == "write":
                    await s.write(req.value, tags=req.tags, key=req.key, ttl=req.ttl,
                                  entry_id=entry_id)
                else:
                    await s.write_many([req])
            except Exception as exc:
                if env.snapshot() == damaged:
                    t.refused += 1  # failed whole
                else:
                    t.harmed += 1
                    t.escapes.append(f"{what} / {op}: half-written after {exc!r:.100}")
                continue
            # It succeeded: harmless only if the entry is whole and its event published.
            ev = await env.admin.client.hget(s.keys.entry(entry_id), "event_id")
            if not ev:
                t.harmed += 1
                t.escapes.append(f"{what} / {op}: written without its event")
            _restore(env, damaged)
        _restore(env, clean)
        # The retry after the damage is undone: published, not "succeeded" with no event.
        e = await s.write(req.value, tags=req.tags, key=req.key, ttl=req.ttl,
                          entry_id=entry_id)
        ev = await env.admin.client.hget(s.keys.entry(e.id), "event_id")
        t.tries += 1
        if not ev:
            t.harmed += 1
            t.escapes.append(f"{what}: retry with the same id stored without an event")
        else:
            t.refused += 1
        _restore(env, clean)
    line = t.line()
    assert t.harmed == 0, (line, t.escapes)


async def test_check_reports_and_repairs_an_entry_without_its_event(
    any_env: AttackEnv,
) -> None:
    env = any_env
    bb = env.admin
    s = bb.scope(f"agent:{VICTIM}:working")
    e = await s.write({"n": 1}, tags={"x"})
    assert (await bb.check()).ok
    # By hand: a second entry, whole in every index, but no event was ever published.
    fields = await bb.client.hgetall(s.keys.entry(e.id))
    orphan = new_ulid()
    fields = {k: v for k, v in fields.items()
              if k not in (b"event_id", b"last_event_id", b"relayed", b"relayed_id")}
    fields[b"id"] = orphan.encode()
    await bb.client.hset(s.keys.entry(orphan), mapping=fields)
    for z in (s.keys.ix, s.keys.exp, s.keys.evict):
        score = await bb.client.zscore(z, e.id)
        if score is not None:
            await bb.client.zadd(z, {orphan: score})
    await bb.client.sadd(s.keys.tag_set("x"), orphan)
    await bb.client.hincrby(s.keys.tags, "x", 1)
    report = await bb.check()
    found = [d for d in report.drift if d.member == orphan]
    print(f"check: entry without its event: {len(found)} finding(s): "
          f"{[(d.index, d.problem) for d in found]}")
    # Tallied like the attacks: the damage is "refused" when check names it, "harmed"
    # when it goes unseen or survives the repair.
    t = Tally("check: an entry without its event, made by hand")
    t.tries = 1
    seen = not report.ok and any("event" in (d.index + d.problem) for d in found)
    repaired = await bb.check(repair=True)
    fixed = (repaired.repaired and (await bb.check()).ok
             and bool(await bb.client.hget(s.keys.entry(orphan), "event_id")))
    t.refused = int(seen)
    t.harmed = int(not (seen and fixed))
    line = t.line()
    assert seen, (line, report.drift)
    assert fixed, (line, repaired.drift)


# -- 5. edges owned, not clobbered -----------------------------------------------------------

OPERATOR = Trigger(min_count=5, max_age=1)


def _summarize_edge() -> MemorySubscription:
    return next(e for e in default_edges("x") if e.transformer == "summarize")


@pytest.mark.process  # the CLI as a process
async def test_hierarchy_install_and_grant_keep_an_operators_trigger(
    any_env: AttackEnv,
) -> None:
    env = any_env
    bb = env.admin
    await install_default_hierarchy(bb, "first")
    edge = _summarize_edge()
    reg = Registry(bb)
    try:
        await reg.save_edge(replace(edge, trigger=OPERATOR))
        assert (await reg.get_edge(edge.id)).trigger == OPERATOR  # type: ignore[union-attr]
        t = Tally("edges: setup by others and a confined agent vs an operator's trigger")
        # Another agent's setup, through every path that installs a hierarchy.
        steps: list[tuple[str, Any]] = [
            ("install_default_hierarchy", lambda: install_default_hierarchy(bb, "second")),
            ("install with a team", lambda: install_default_hierarchy(bb, "third", ["t"])),
            ("acl grant (AclAdmin + provision)", lambda: env.agent("fourth", ("t",))),
        ]
        for what, step in steps:
            t.tries += 1
            await step()
            got = (await reg.get_edge(edge.id)).trigger  # type: ignore[union-attr]
            if got != OPERATOR:
                t.harmed += 1
                t.escapes.append(f"{what}: trigger now {got.to_json()}")
                await reg.save_edge(replace(edge, trigger=OPERATOR))
            else:
                t.refused += 1
        # The CLI runs its own event loop: a process of its own, as an operator runs it.
        res = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "cli", "acl", "grant", "fifth",
                             "--redis-url", env.admin_url], capture_output=True, timeout=120)
        assert res.returncode == 0, res.stderr[-2000:]
        got = (await reg.get_edge(edge.id)).trigger  # type: ignore[union-attr]
        t.tries += 1
        if got != OPERATOR:
            t.harmed += 1
            t.escapes.append(f"blackboard acl grant: trigger now {got.to_json()}")
            await reg.save_edge(replace(edge, trigger=OPERATOR))
        else:
            t.refused += 1
        # The confined agent on the registry, the buffers and the edges version.
        a = await env.agent(ATTACKER)
        part = PartitionKeys(a.scope(f"agent:{ATTACKER}:working").partition)
        rec = edge_record(edge.id)
        buf = part.pending(edge.id, f"agent:{VICTIM}:stm")
        edgesv = partition_key(part, "edgesv") if not hasattr(part, "edges_version") \
            else part.edges_version
        for what, cmd in (
            ("HSET edge trigger", ("HSET", rec, "trigger", '{"min_count": 1000}')),
            ("DEL edge record", ("DEL", rec)), ("HDEL edge", ("HDEL", rec, "trigger")),
            ("SREM edge ids", ("SREM", EDGE_RECORDS, edge.id)),
            ("SADD edge ids", ("SADD", EDGE_RECORDS, "x")),
            ("HGETALL edge", ("HGETALL", rec)),
            ("INCR edges version", ("INCR", edgesv)), ("SET edges version", ("SET", edgesv, 0)),
            ("DEL edges version", ("DEL", edgesv)),
            ("RPUSH buffer", ("RPUSH", buf, "x")), ("DEL buffer", ("DEL", buf)),
            ("LTRIM buffer", ("LTRIM", buf, 1, 0)),
            ("HSET inflight", ("HSET", part.inflight, buf, 0)),
            ("SREM pendings", ("SREM", part.pendings, buf)),
        ):
            await t.attempt(what, a.client.execute_command(*cmd))
        line = t.line()
        assert (await reg.get_edge(edge.id)).trigger == OPERATOR  # type: ignore[union-attr]
        assert t.harmed == 0, (line, t.escapes)
    finally:
        await reg.aclose()
