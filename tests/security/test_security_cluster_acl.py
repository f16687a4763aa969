"""Agent users on Redis Cluster: ACLs are per node, so a grant must reach every node, and
the confined user must be refused the same things on each of them."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from redis import exceptions as rexc

from blackboard import AccessDenied, Blackboard
from blackboard.acl import AclAdmin
from blackboard.server import RedisClusterServer

pytestmark = pytest.mark.cluster


def _refusal(exc: BaseException) -> bool:
    text = str(exc)
    return isinstance(exc, rexc.NoPermissionError | AccessDenied) or any(
        s in text for s in ("NOPERM", "ACL failure", "no permissions")
    )


async def test_grant_reaches_every_node_and_confines_the_agent(
    cbb: Blackboard, cluster: RedisClusterServer
) -> None:
    admin = AclAdmin(cbb)
    ga = await admin.grant("a", ["t"], rotate=True)
    gb = await admin.grant("b", [], rotate=True)
    boards: list[Blackboard] = []
    try:
        a = await Blackboard.connect(cluster.url, username=ga.username, password=ga.password)
        b = await Blackboard.connect(cluster.url, username=gb.username, password=gb.password)
        boards += [a, b]
        assert a.cluster and b.cluster
        # Scopes land on different nodes (partitions spread over the slots): write and read
        # each through the agent's own client.
        mine = [a.scope(s) for s in ("agent:a:working", "agent:a:stm", "team:t")]
        written = [await s.write({"n": i}, tags={"x"}) for i, s in enumerate(mine)]
        for s, e in zip(mine, written, strict=True):
            assert (await s.get(e.id)).value == e.value
        secret = await b.scope("agent:b:working").write({"secret": "b"}, tags={"x"})
        bs = cbb.scope("agent:b:working")
        attacks: list[Any] = [
            a.client.hgetall(bs.keys.entry(secret.id)),
            a.client.zrange(bs.keys.ix, 0, -1),
            a.client.smembers(bs.keys.tag_set("x")),
            a.client.hset(bs.keys.entry(secret.id), "value", '"pwned"'),
            a.client.xrange(bs.keys.feed),
            a.scope("agent:b:working").write("not mine"),
            a.scope("team:u").write("not my team"),
        ]
        for i, attack in enumerate(attacks):
            try:
                got = await attack
            except Exception as exc:
                assert _refusal(exc), f"attack #{i}: {exc!r}"
            else:
                raise AssertionError(f"attack #{i} allowed: {got!r:.200}")
        assert (await bs.get(secret.id)).value == {"secret": "b"}
        listed = {u.agent: (u.teams, u.enabled, u.exists) for u in await admin.list()}
        assert listed == {"a": (("t",), True, True), "b": ((), True, True)}
        # every node knows the user, with the same rules
        for node in cluster.nodes:
            r = redis.Redis(port=node.port)
            try:
                assert r.acl_getuser(ga.username) is not None
            finally:
                r.close()
    finally:
        for board in boards:
            await board.close()
        await admin.revoke("a")
        await admin.revoke("b")
