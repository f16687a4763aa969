"""Attack suite: a real agent user on a real Redis tries everything it must not do.

Every attempt must be refused by Redis itself (NOPERM, or the script's ACL failure), and
the whole Redis must be byte-identical afterwards. The same user then succeeds at all it
is allowed to do. Run on both servers (Debian 7.0 and 8.2 via BLACKBOARD_REDIS_SERVER).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis
from redis import exceptions as rexc

from blackboard import AccessDenied, Blackboard, EntryTooLarge, ScopeFull
from blackboard.acl import AclAdmin, agent_rules, partition_tags
from blackboard.entry import ScopePolicy
from blackboard.errors import InvalidArgument, ServerError
from blackboard.keys import CONFIG, SCOPE_RECORDS, PartitionKeys, scope_record
from blackboard.scripts import SCRIPTS

AgentBoard = Callable[..., Awaitable[Blackboard]]
Snap = Callable[[], dict[bytes, bytes]]


def _is_refusal(exc: BaseException) -> bool:
    if isinstance(exc, rexc.NoPermissionError | AccessDenied):
        return True
    text = str(exc)
    return "NOPERM" in text or "ACL failure" in text or "no permissions" in text.lower()


async def _refused(coro: Awaitable[Any]) -> None:
    try:
        got = await coro
    except Exception as exc:  # the kind is checked just below
        assert _is_refusal(exc), repr(exc)
        return
    raise AssertionError(f"allowed, returned {got!r:.200}")


async def _raw(client: Any, *cmd: str) -> bytes:
    """Send one command on a fresh connection of ``client``'s user, reply unparsed (redis-py's
    INFO parser turns an error reply into garbage)."""
    kw = client.connection_pool.connection_kwargs
    reader, writer = await asyncio.open_connection(kw["host"], kw["port"])
    try:
        def enc(*parts: str) -> bytes:
            return f"*{len(parts)}\r\n".encode() + b"".join(
                f"${len(x.encode())}\r\n{x}\r\n".encode() for x in parts)
        writer.write(enc("AUTH", kw["username"], kw["password"]) + enc(*cmd))
        await writer.drain()
        assert (await reader.readline()).startswith(b"+OK")
        line = await reader.readline()
    finally:
        writer.close()
    if line.startswith(b"-"):
        raise rexc.ResponseError(line[1:].decode().strip())
    return line


async def _setup(bb: Blackboard, agent_board: AgentBoard) -> dict[str, Any]:
    a = await agent_board("a", ["t"])
    b = await agent_board("b", ["u"])
    eb = await b.scope("agent:b:working").write({"secret": "b"}, tags={"x"}, key="k")
    eu = await b.scope("team:u").write({"team": "u"}, tags={"x"})
    ec = await bb.scope("collective").write({"shared": 1}, tags={"c"})
    return {"a": a, "b": b, "eb": eb, "eu": eu, "ec": ec}


def test_partition_globs_and_rules_are_exact() -> None:
    assert partition_tags(8) == ["{p[0-9]}"]
    assert partition_tags(11) == ["{p[0-9]}", "{p[0-9][0-9]}"]
    rules = agent_rules("a", ["t"], 8)
    assert "~bb:{p[0-9]}:s:agent:a:*" in rules and "~bb:{p[0-9]}:s:team:t:*" in rules
    assert "%R~bb:{p[0-9]}:s:collective:*" in rules
    assert "(%W~bb:{p[0-9]}:inbox +rpush)" in rules
    assert not any(":bus" in r for r in rules)  # no right at all on the buses
    assert not any("*}" in r or "{p*" in r for r in rules)  # never a '*' inside the tag


def test_a_reserved_segment_is_no_agent_id_or_team() -> None:
    # `acl grant e` wrote the user and its record, then failed provisioning `agent:e:*`
    # (found by test_security_inputs.test_cli_arguments): refused before anything is written.
    for bad in (("e", []), ("tag", []), ("a", ["e"]), ("a", ["tag"])):
        with pytest.raises(InvalidArgument, match="reserved in scope ids"):
            agent_rules(bad[0], bad[1], 8)


async def test_agent_cannot_touch_other_agents_buses_or_server(
    bb: Blackboard, agent_board: AgentBoard, snapshot: Snap
) -> None:
    s = await _setup(bb, agent_board)
    a: Blackboard = s["a"]
    c = a.client
    bs = bb.scope("agent:b:working")
    us = bb.scope("team:u")
    eb = s["eb"].id
    bus = PartitionKeys(bs.partition).bus
    own = bb.scope("agent:a:working")
    await own.write("mine")  # creates a's keys, so renames etc. have a source
    write = SCRIPTS["write"].sha
    before = snapshot()

    def w_args(scope: str, entry: str = "01ATTACK0000000000000000000") -> list[Any]:
        return [entry, '"x"', "[]", "{}", "", "0.5", "1.0", "", "[]", "", "", scope, "upsert"]

    attacks: list[Awaitable[Any]] = [
        # read B's private scope
        c.hgetall(bs.keys.entry(eb)), c.hget(bs.keys.entry(eb), "value"),
        c.zrange(bs.keys.ix, 0, -1), c.smembers(bs.keys.tag_set("x")),
        c.hgetall(bs.keys.keys), c.hgetall(bs.keys.tags), c.exists(bs.keys.entry(eb)),
        c.hscan(bs.keys.keys, 0), c.sinter([bs.keys.tag_set("x")]),
        c.hgetall(us.keys.entry(s["eu"].id)),  # a team a is not in
        c.hgetall(scope_record("agent:b:working")), c.smembers(SCOPE_RECORDS),
        # write / delete B's keys, directly and through the scripts
        c.hset(bs.keys.entry(eb), "value", '"pwned"'), c.zadd(bs.keys.ix, {"z": 1}),
        c.sadd(bs.keys.tag_set("x"), "z"), c.delete(bs.keys.entry(eb)),
        c.unlink(bs.keys.ix), c.hdel(bs.keys.keys, "k"),
        c.evalsha(write, 7, *bs.keys.script_keys(), *w_args(bs.id)),
        c.evalsha(SCRIPTS["delete"].sha, 7, *bs.keys.script_keys(), eb, bs.id, ""),
        c.evalsha(write, 7, *us.keys.script_keys(), *w_args(us.id)),  # a team a is not in
        c.evalsha(write, 7, *bb.scope("collective").keys.script_keys(), *w_args("collective")),
        # own prefix first, another scope's indexes after it
        c.evalsha(write, 7, own.keys.prefix, *bs.keys.script_keys()[1:], *w_args(own.id)),
        c.evalsha(SCRIPTS["embed"].sha, 1, bs.keys.entry(eb), "1", b"\0" * 4, "e"),
        c.rename(own.keys.ix, bs.keys.ix), c.copy(bs.keys.entry(eb), own.keys.entry("X")),
        # list
        c.keys("*"), c.scan(0), c.scan(0, match="bb:*"), c.randomkey(),
        c.smembers(PartitionKeys(bs.partition).scopes), c.dbsize(),
        # tail / consume B's feed and the buses
        c.xread({bs.keys.feed: "0"}), c.xrange(bs.keys.feed), c.xrevrange(bs.keys.feed),
        c.xrange(bus), c.xread({bus: "0"}), c.xlen(bus), c.exists(bus),
        c.xreadgroup("g", "c", {bus: ">"}), c.xack(bus, "g", "0-1"),
        c.xgroup_create(bus, "mine", id="0"), c.xinfo_stream(bus), c.xtrim(bus, maxlen=0),
        c.delete(bus), c.xdel(bus, "0-1"), c.zrange(PartitionKeys(bs.partition).ttl, 0, -1),
        # change its own limits
        c.hset(own.keys.cfg, "max_entries", 0), c.delete(own.keys.cfg),
        c.hset(CONFIG, "partitions", 1),
        # the server
        c.flushall(), c.flushdb(), c.config_set("maxmemory-policy", "allkeys-lru"),
        c.config_get("*"), c.execute_command("ACL", "SETUSER", "bb-agent-a", "+@all", "~*"),
        c.execute_command("ACL", "LIST"),
        c.eval("return redis.call('KEYS', '*')", 0), c.script_load("return 1"),
        c.script_flush(), c.execute_command("FUNCTION", "FLUSH"),
        c.execute_command("FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('f', "
                          "function() return 1 end)"),
        c.execute_command("CLIENT", "LIST"), c.execute_command("CLIENT", "KILL", "TYPE", "normal"),
        _raw(c, "INFO"), c.execute_command("SWAPDB", 0, 1), c.execute_command("MONITOR"),
        c.publish("ch", "x"), c.execute_command("MOVE", own.keys.ix, 1),
    ]
    for i, attack in enumerate(attacks):
        try:
            await _refused(attack)
        except AssertionError as exc:
            raise AssertionError(f"attack #{i} was not refused: {exc}") from None
    # DEBUG is also off in the server config (that error comes first): ask the ACL itself.
    # SHUTDOWN cannot be tried live.
    for cmd in (("DEBUG", "SLEEP", "0"), ("SHUTDOWN", "NOSAVE"), ("BGREWRITEAOF",),
                ("REPLICAOF", "NO", "ONE"), ("SAVE",)):
        got = await bb.client.execute_command("ACL", "DRYRUN", "bb-agent-a", *cmd)
        assert b"no permissions" in got.lower() if isinstance(got, bytes) else False, cmd
    # Forging the scope of an event through the script: refused by the script itself
    # (the blackboard's client hands Redis's error reply over as a ServerError).
    with pytest.raises(ServerError, match="BAD_SCOPE"):
        await c.evalsha(write, 7, *own.keys.script_keys(), *w_args(bs.id))
    assert snapshot() == before  # nothing changed anywhere
    assert (await bb.scope("agent:b:working").get(eb)).value == {"secret": "b"}


async def test_agent_does_everything_it_may(
    bb: Blackboard, agent_board: AgentBoard
) -> None:
    s = await _setup(bb, agent_board)
    a: Blackboard = s["a"]
    own, team, col = a.scope("agent:a:working"), a.scope("team:t"), a.scope("collective")
    e = await own.write({"v": 1}, tags={"x", "y"}, key="k", ttl=60)
    assert (await own.get(e.id)).value == {"v": 1}
    assert (await own.get_by_key("k")).id == e.id
    assert await own.tags() == {"x": 1, "y": 1}
    assert [x.id for x in await own.entries(all_of={"x"})] == [e.id]
    e2 = await own.update(e.id, value={"v": 2}, tags={"x"}, ttl=None, expected_version=1)
    assert e2.version == 2
    assert (await own.reinforce(e.id, by="a"))[1] == 1
    assert await own.set_embeddings([(e.id, 3, b"\0" * 8)], "test") == 1
    many = await own.write_many([{"i": i} for i in range(5)])
    assert await own.count() == 6
    assert await own.delete(many[0].id)
    assert [ev.type.value for ev in await own.events()][:2] == ["written", "updated"]
    t = await team.write("team note", tags={"z"})
    assert [x.id for x in await bb.scope("team:t").entries()] == [t.id]
    assert (await col.get(s["ec"].id)).value == {"shared": 1}
    assert [x.id for x in await col.entries()] == [s["ec"].id]
    # tail its own feed (XREAD BLOCK) while the service writes another event
    it = own.feed(block_ms=200).__aiter__()
    nxt = asyncio.ensure_future(it.__anext__())
    await asyncio.sleep(0.05)
    await bb.scope("agent:a:working").write("from the service")
    ev = await asyncio.wait_for(nxt, 5)
    assert ev.scope == "agent:a:working"
    await it.aclose()  # type: ignore[attr-defined]
    # the bus gets the agent's events (workers see them) once the relay moved them
    await bb.relays.relay_all()
    bus = await bb.client.xrange(PartitionKeys(own.partition).bus)
    assert any(f[b"entry"] == e.id.encode() for _sid, f in bus)
    # ...and the checker finds the indexes it wrote consistent

    assert (await bb.check()).ok


async def test_limits_hold_and_cannot_be_lifted(bb: Blackboard, agent_board: AgentBoard,
                                                snapshot: Snap) -> None:
    a = await agent_board("a")
    await bb.scope("agent:a:stm").set_policy(
        ScopePolicy(max_entries=2, on_full="reject", max_entry_bytes=100)
    )
    s = a.scope("agent:a:stm")
    await s.write("1")
    await s.write("2")
    before = snapshot()
    with pytest.raises(ScopeFull):
        await s.write("3")
    with pytest.raises(EntryTooLarge):
        await s.update((await s.ids())[0], value="x" * 500)
    await _refused(a.client.hset(s.keys.cfg, "max_entries", 0))
    await _refused(a.client.hdel(s.keys.cfg, "on_full"))
    assert snapshot() == before


async def test_team_membership_changes_update_the_user(
    bb: Blackboard, agent_board: AgentBoard, redis_url: str
) -> None:
    a = await agent_board("a", ["t"])
    await a.scope("team:t").write("ok")
    admin = AclAdmin(bb)
    assert (await admin.remove_team("a", "t")).password is None  # password kept
    await _refused(a.scope("team:t").write("no longer"))
    await admin.add_team("a", "v")
    await a.scope("team:v:working").write("new team")
    assert [(u.agent, u.teams, u.enabled) for u in await admin.list()] == [("a", ("v",), True)]
    assert await admin.revoke("a")
    with pytest.raises(Exception):  # noqa: B017 - Redis closes its connections
        await a.scope("team:v").write("revoked")


async def test_agent_cannot_load_scripts_but_service_reloads_them(
    bb: Blackboard, agent_board: AgentBoard, clean_redis: redis.Redis
) -> None:
    a = await agent_board("a")
    clean_redis.script_flush()  # as after a restart
    with pytest.raises(AccessDenied, match="load-scripts"):
        await a.scope("agent:a:working").write("x")
    await AclAdmin(bb).load_scripts()
    await a.scope("agent:a:working").write("x")


async def test_service_user_runs_workers_but_not_admin(bb: Blackboard, redis_url: str) -> None:
    admin = AclAdmin(bb)
    g = await admin.grant_service(rotate=True)
    try:
        async with Blackboard.connect(redis_url, username=g.username,
                                      password=g.password) as svc:
            e = await svc.scope("agent:b:working").write("by service")
            await svc.ensure_groups(["r"])
            got = [b async for b in _one(svc.consume("r", "c1", block_ms=100))]
            assert any(ev.entry_id == e.id for ev in got[0].events)
            await svc.trim()
            for cmd in (("FLUSHALL",), ("CONFIG", "SET", "appendonly", "no"),
                        ("ACL", "SETUSER", "x"), ("KEYS", "*"), ("SCRIPT", "FLUSH")):
                await _refused(svc.client.execute_command(*cmd))
            got = await bb.client.execute_command("ACL", "DRYRUN", g.username, "DEBUG",
                                                  "SLEEP", "0")
            assert b"no permissions" in got.lower()
    finally:
        await bb.client.execute_command("ACL", "DELUSER", g.username)


async def _one(it: Any) -> Any:
    async for batch in it:
        yield batch
        await batch.ack()
        return


async def test_junk_in_a_schedule_does_not_stop_the_sweep(bb: Blackboard) -> None:
    from blackboard import WriteRequest

    s = bb.scope("agent:a:working")
    await s.write_many([WriteRequest(1, ttl=0.01)])
    await bb.client.zadd(s.keys.part.ttl, {"not{a}scope": 0, b"\xff": 0})
    await asyncio.sleep(0.05)
    assert (await bb.sweep()).expired == {s.id: 1}
    assert await bb.client.zcard(s.keys.part.ttl) == 0



async def test_explicit_credentials_win_over_the_urls(bb: Blackboard, redis_url: str) -> None:
    # redis-py lets a URL's user win over username=/password=: an agent process handed the
    # operator's URL, credentials and all, plus its own login must still be confined.
    g = await AclAdmin(bb).grant("a", (), rotate=True)
    operator_url = redis_url.replace("redis://", "redis://default:anything@", 1)
    a = await Blackboard.connect(operator_url + "?password=x", username=g.username,
                                 password=g.password)
    try:
        assert await a.client.execute_command("ACL", "WHOAMI") == g.username.encode()
        with pytest.raises(AccessDenied) as refused:  # NOPERM, translated by the client
            await a.client.hgetall("bb:registry:scopes")
        assert refused.value.by_server
    finally:
        await a.close()
        await AclAdmin(bb).revoke("a")
