"""Issue 12, the confinement attempts, systematically: every key-touching command a confined
agent holds, with each of its options, aimed at another agent's keys, its teams' keys, the
partition-wide keys (bus, inbox, DLQ, buffers, schedules, edges version...), the registry and
the ACL records; then the server commands. Every attempt must be refused by Redis and the
whole Redis must be byte-identical afterwards.

The only (command, key) pairs left out are those the agent's ACL rules grant on purpose
(``INTENDED``: reading ``bb:config`` and the flowmark; RPUSH to the inbox; SADD to the
scopes/retired sets; ZADD/ZREM on the ttl/prune schedules; reading the indexing flag and
ZADD to the queue of entries waiting for a vector), each with its own test of
harmlessness (test_attack_bus: the inbox; tests/security/test_security_schedules.py: the
schedules).
"""

from __future__ import annotations

from typing import Any

from support_attack import (
    AttackEnv,
    Tally,
    attack_base,
    attack_cluster_base,
    attack_cluster_env,
    attack_env,
    neighbour,
    partition_key,
    raw,
)

from blackboard import Blackboard
from blackboard.keys import (
    ACL_AGENTS,
    CONFIG,
    EDGE_RECORDS,
    SCOPE_RECORDS,
    edge_record,
    job_lease,
    lease,
    scope_record,
)
from blackboard.scripts import SCRIPTS

__all__ = ["attack_base", "attack_cluster_base", "attack_cluster_env", "attack_env"]

VICTIM = "c"
ATTACKER = neighbour(VICTIM)
EXHAUSTED = "18446744073709551615-18446744073709551615"
K = "\0KEY\0"  # placeholder for the target key in a command template

#: Every key-touching command of AGENT_COMMANDS and of the selectors, with its options.
VARIANTS: dict[str, list[tuple[str, ...]]] = {
    "hget": [("HGET", K, "value")], "hgetall": [("HGETALL", K)],
    "hmget": [("HMGET", K, "value", "id")], "hexists": [("HEXISTS", K, "value")],
    "hlen": [("HLEN", K)], "hkeys": [("HKEYS", K)], "hvals": [("HVALS", K)],
    "hscan": [("HSCAN", K, "0"), ("HSCAN", K, "0", "MATCH", "*", "COUNT", "1000")],
    "hstrlen": [("HSTRLEN", K, "value")], "hset": [("HSET", K, "value", '"pwned"')],
    "hdel": [("HDEL", K, "value")], "hincrby": [("HINCRBY", K, "n", "1")],
    "zcard": [("ZCARD", K)], "zcount": [("ZCOUNT", K, "-inf", "+inf")],
    "zrange": [("ZRANGE", K, "0", "-1"), ("ZRANGE", K, "0", "-1", "WITHSCORES"),
               ("ZRANGE", K, "-inf", "+inf", "BYSCORE", "LIMIT", "0", "10"),
               ("ZRANGE", K, "0", "-1", "REV")],
    "zrangebyscore": [("ZRANGEBYSCORE", K, "-inf", "+inf"),
                      ("ZRANGEBYSCORE", K, "-inf", "+inf", "WITHSCORES", "LIMIT", "0", "5")],
    "zrevrange": [("ZREVRANGE", K, "0", "-1", "WITHSCORES")],
    "zrevrangebyscore": [("ZREVRANGEBYSCORE", K, "+inf", "-inf")],
    "zscore": [("ZSCORE", K, "m")], "zmscore": [("ZMSCORE", K, "m", "n")],
    "zrank": [("ZRANK", K, "m")], "zrevrank": [("ZREVRANK", K, "m")],
    "zadd": [("ZADD", K, "1", "m"), ("ZADD", K, "NX", "1", "m"),
             ("ZADD", K, "XX", "CH", "1", "m"), ("ZADD", K, "GT", "1", "m"),
             ("ZADD", K, "INCR", "1", "m")],
    "zrem": [("ZREM", K, "m")],
    "sinter": [("SINTER", K)], "sunion": [("SUNION", K)], "sdiff": [("SDIFF", K)],
    "smembers": [("SMEMBERS", K)], "sismember": [("SISMEMBER", K, "m")],
    "smismember": [("SMISMEMBER", K, "m", "n")], "scard": [("SCARD", K)],
    "sscan": [("SSCAN", K, "0", "MATCH", "*", "COUNT", "100")],
    "sadd": [("SADD", K, "m")], "srem": [("SREM", K, "m")],
    "xread": [("XREAD", "STREAMS", K, "0"), ("XREAD", "COUNT", "10", "STREAMS", K, "0"),
              ("XREAD", "COUNT", "1", "BLOCK", "1", "STREAMS", K, "$")],
    "xrange": [("XRANGE", K, "-", "+"), ("XRANGE", K, "-", "+", "COUNT", "1")],
    "xrevrange": [("XREVRANGE", K, "+", "-", "COUNT", "1")], "xlen": [("XLEN", K)],
    "xadd": [("XADD", K, "*", "x", "y"), ("XADD", K, "MAXLEN", "0", "*", "x", "y"),
             ("XADD", K, "MAXLEN", "~", "0", "LIMIT", "10", "*", "x", "y"),
             ("XADD", K, "MINID", "99999999999999", "*", "x", "y"),
             ("XADD", K, "NOMKSTREAM", "*", "x", "y"), ("XADD", K, EXHAUSTED, "x", "y")],
    "xinfo|stream": [("XINFO", "STREAM", K), ("XINFO", "STREAM", K, "FULL")],
    "exists": [("EXISTS", K)], "type": [("TYPE", K)], "pttl": [("PTTL", K)],
    "del": [("DEL", K)], "get": [("GET", K)],
    "rpush": [("RPUSH", K, "x")],
}
READ_ONLY = {
    "hget", "hgetall", "hmget", "hexists", "hlen", "hkeys", "hvals", "hscan", "hstrlen",
    "zcard", "zcount", "zrange", "zrangebyscore", "zrevrange", "zrevrangebyscore", "zscore",
    "zmscore", "zrank", "zrevrank", "sinter", "sunion", "sdiff", "smembers", "sismember",
    "smismember", "scard", "sscan", "xread", "xrange", "xrevrange", "xlen", "xinfo|stream",
    "exists", "type", "pttl", "get",
}

#: Keyless and server commands (the second half of the issue's 110).
SERVER: list[tuple[str, ...]] = [
    ("FLUSHALL",), ("FLUSHDB",), ("KEYS", "*"), ("SCAN", "0"), ("SCAN", "0", "MATCH", "bb:*"),
    ("RANDOMKEY",), ("DBSIZE",), ("CONFIG", "SET", "maxmemory-policy", "allkeys-lru"),
    ("CONFIG", "GET", "*"), ("CONFIG", "SET", "appendonly", "no"), ("CONFIG", "RESETSTAT"),
    ("ACL", "SETUSER", "x", "on", "+@all", "~*"), ("ACL", "LIST"), ("ACL", "GETUSER", "default"),
    ("ACL", "DELUSER", "default"), ("ACL", "SAVE"), ("ACL", "LOAD"), ("ACL", "LOG"),
    ("EVAL", "return redis.call('KEYS', '*')", "0"), ("SCRIPT", "LOAD", "return 1"),
    ("SCRIPT", "FLUSH"), ("SCRIPT", "KILL"), ("FUNCTION", "FLUSH"),
    ("FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('f', function() return 1 end)"),
    ("FCALL", "f", "0"), ("CLIENT", "LIST"), ("CLIENT", "KILL", "TYPE", "normal"),
    ("CLIENT", "PAUSE", "1000"), ("CLIENT", "NO-EVICT", "on"), ("INFO",), ("MONITOR",),
    ("SWAPDB", "0", "1"), ("SELECT", "1"), ("PUBLISH", "ch", "x"), ("SUBSCRIBE", "ch"),
    ("DEBUG", "SLEEP", "0"), ("BGREWRITEAOF",), ("BGSAVE",), ("SAVE",), ("LASTSAVE",),
    ("REPLICAOF", "NO", "ONE"), ("SLOWLOG", "GET"), ("LATENCY", "LATEST"), ("MEMORY", "STATS"),
    ("OBJECT", "ENCODING", CONFIG), ("WAIT", "0", "0"), ("FAILOVER",), ("MODULE", "LIST"),
    ("CLUSTER", "RESET"), ("CLUSTER", "FLUSHSLOTS"), ("CLUSTER", "FORGET", "x"),
    ("SHUTDOWN", "NOSAVE"),
]
#: Checked with ACL DRYRUN instead of being run (they would stop or block the server, or the
#: client library cannot send them as a plain request).
DRY_ONLY = {"SHUTDOWN", "MONITOR", "SUBSCRIBE", "DEBUG", "FAILOVER", "CLIENT", "REPLICAOF",
            "CLUSTER", "SELECT", "WAIT", "BGSAVE", "BGREWRITEAOF", "SAVE", "SWAPDB",
            "INFO"}


#: The (target, command) pairs the agent's rules grant on purpose, stated here rather than
#: read off ``agent_rules``: a rule broadened by mistake must show up as an allowed attempt,
#: not shrink the attack.
INTENDED: dict[str, set[str]] = {
    "flowmark": READ_ONLY, "config": READ_ONLY,  # the scripts' dataflow hold; bb:config
    "inbox": {"rpush"},  # the mutation scripts' content events
    "scopes": {"sadd"}, "retired": {"sadd"},
    "ttl": {"zadd", "zrem"}, "prune": {"zadd", "zrem"},
    # the index role's queue (junk members are dropped: test_retrieval_indexer)
    "indexing": READ_ONLY, "unembedded": {"zadd"},
}


def _targets(bb: Blackboard, victim_entry: str) -> dict[str, str]:
    """Keys that belong to someone else, or to everyone."""
    vs = bb.scope(f"agent:{VICTIM}:working").keys
    ts = bb.scope("team:other").keys
    part = vs.part
    return {
        "C entry": vs.entry(victim_entry), "C ix": vs.ix, "C tags": vs.tags, "C keys": vs.keys,
        "C exp": vs.exp, "C evict": vs.evict, "C feed": vs.feed, "C tag set": vs.tag_set("x"),
        "C cfg": vs.cfg, "C record": scope_record(vs.scope_id),
        "C stm ix": bb.scope(f"agent:{VICTIM}:stm").keys.ix,
        "other team ix": ts.ix, "other team feed": ts.feed,
        "bus": part.bus, "dlq": part.dlq, "inbox": partition_key(part, "inbox"),
        "relaying": partition_key(part, "relaying"), "retired": partition_key(part, "retired"),
        "flowmark": partition_key(part, "flowmark"), "edges version": partition_key(part,
                                                                                     "edgesv"),
        "scopes": part.scopes, "ttl": part.ttl, "prune": part.prune,
        "indexing": part.indexing, "unembedded": part.unembedded,
        "pendings": part.pendings, "inflight": part.inflight,
        "buffer": part.pending("summarize-x", f"agent:{VICTIM}:stm"),
        "config": CONFIG, "scope records": SCOPE_RECORDS, "edge records": EDGE_RECORDS,
        "edge record": edge_record("summarize-x"), "acl agents": ACL_AGENTS,
        "lease": lease("summarize", part.partition),
        "job lease": job_lease("sweep", part.partition),
    }


def _script_attempts(bb: Blackboard) -> list[tuple[str, tuple[Any, ...]]]:
    """Every script by SHA with another scope's keys, and with partition keys."""
    vs = bb.scope(f"agent:{VICTIM}:working").keys
    part = vs.part
    out: list[tuple[str, tuple[Any, ...]]] = []
    for s in SCRIPTS.all():
        for cmd in ("EVALSHA", "EVALSHA_RO"):  # an agent holds both; _RO reads only
            out.append((f"{cmd} {s.name} on C's keys",
                        (cmd, s.sha, 7, *vs.script_keys(), *["x"] * 13)))
            out.append((f"{cmd} {s.name} on partition keys",
                        (cmd, s.sha, 3, part.bus, part.pendings, part.inflight, "x", "1")))
    return out


async def _matrix(env: AttackEnv, name: str, full: bool) -> Tally:
    bb = env.admin
    victim = await env.agent(VICTIM, ("vt",))
    e = await victim.scope(f"agent:{VICTIM}:working").write({"secret": 1}, tags={"x"}, key="k")
    await bb.scope("team:other").write({"team": "secret"})
    a = await env.agent(ATTACKER, ("t",))
    await a.scope(f"agent:{ATTACKER}:working").write("mine")
    kw = (a.client.get_connection_kwargs() if bb.cluster
          else a.client.connection_pool.connection_kwargs)
    user, pw = kw["username"], kw["password"]
    ports = [r.connection_pool.connection_kwargs["port"] for r in env.nodes]
    before = env.snapshot()
    t = Tally(name)
    skipped = 0
    for label, key in _targets(bb, e.id).items():
        for cmd, variants in VARIANTS.items():
            if cmd in INTENDED.get(label, set()):
                skipped += len(variants)
                continue
            for v in variants if full else variants[:1]:
                args = tuple(key if x == K else x for x in v)
                await t.attempt(f"{' '.join(map(str, args))[:80]} ({label})",
                                a.client.execute_command(*args))
    for label, args in _script_attempts(bb):
        await t.attempt(label, a.client.execute_command(*args))
    for args in SERVER:
        if args[0] in DRY_ONLY:
            t.tries += 1
            got = await bb.client.execute_command(
                "ACL", "DRYRUN", f"bb-agent-{ATTACKER}", *args,
                **({"target_nodes": bb.client.get_random_node()} if bb.cluster else {}))
            text = got.decode() if isinstance(got, bytes) else str(got)
            if "no permission" in text.lower():
                t.refused += 1
            else:
                t.harmed += 1
                t.escapes.append(f"{' '.join(args)}: DRYRUN {text:.80}")
            continue
        # Sent raw, to every node, as a hostile client would: a cluster client library
        # refuses to route most of these itself, which proves nothing about the server.
        for port in ports:
            t.tries += 1
            reply = await raw("127.0.0.1", port, ("AUTH", user, pw), args)
            assert reply[0] == b"+OK", reply
            if reply[1].startswith(b"-NOPERM"):
                t.refused += 1
            else:
                t.harmed += 1
                t.escapes.append(f"{' '.join(args)[:60]} on {port}: {reply[1][:80]!r}")
    after = env.snapshot()
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    t.harmed += len(changed)
    t.escapes += [f"key changed: {k!r}" for k in sorted(changed)][:20]
    print(f"  ({skipped} pairs the agent's rules grant on purpose left out)")
    return t


async def test_every_command_and_option_on_others_keys_is_refused(
    attack_env: AttackEnv,
) -> None:
    t = await _matrix(attack_env, "confinement: every command and option on others' keys",
                      full=True)
    line = t.line()
    assert t.tries >= 110
    assert t.harmed == 0, (line, t.escapes[:30])
    assert t.refused == t.tries


async def test_confinement_on_the_cluster(attack_cluster_env: AttackEnv) -> None:
    t = await _matrix(attack_cluster_env, "confinement (cluster): each command on others' keys",
                      full=False)
    line = t.line()
    assert t.tries >= 110
    assert t.harmed == 0, (line, t.escapes[:30])
    assert t.refused == t.tries
