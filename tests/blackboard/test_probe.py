"""The feed probe (blackboard.probe): the newest feed ids asked around a piece of work, on a
socket of its own; every way that socket can fail must still give a sound answer, and no
answer may ever be read for the wrong question."""

from __future__ import annotations

import asyncio

import pytest
import redis

from blackboard import AccessDenied, Blackboard
from blackboard.acl import AclAdmin
from blackboard.probe import FeedProbe

A, B, T = "agent:a1:working", "agent:a1:stm", "team:t1"


async def test_answers_around_the_work_on_its_own_socket(bb: Blackboard) -> None:
    probe = bb.feed_probe
    assert isinstance(probe, FeedProbe) and bb.feed_probe is probe
    ran: list[int] = []
    result, ids = await probe.around([A, B], lambda: ran.append(1) or "done")
    assert (result, ran, ids) == ("done", [1], {A: "0-0", B: "0-0"})
    e = await bb.scope(A).write("x")
    # a write acknowledged before the call is in the answer
    _, ids = await probe.around([A, B, T], lambda: None)
    assert ids == await bb.reads.newest_event_ids([A, B, T])
    assert ids[A] == await bb.scope(A).last_event_id() and ids[A] != "0-0"
    assert e.id
    assert (probe.direct, probe.pooled) == (2, 0)
    # no scopes: nothing to ask
    assert await probe.around([], lambda: 7) == (7, {})


async def test_a_busy_probe_sends_the_second_caller_through_the_pool(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    await bb.scope(A).write("x")
    probe = bb.feed_probe
    await probe.around([A], lambda: None)  # open the socket
    # While Redis holds every client, the first caller's answer cannot come: it keeps the
    # socket across its await, and the second caller finds it busy.
    clean_redis.execute_command("CLIENT", "PAUSE", 400, "ALL")
    first = asyncio.create_task(probe.around([A], lambda: "first"))
    await asyncio.sleep(0.05)
    assert not first.done()
    second = await probe.around([A], lambda: "second")
    want = await bb.reads.newest_event_ids([A])
    assert await first == ("first", want) and second == ("second", want)
    assert (probe.direct, probe.pooled) == (2, 1)


async def assert_next_answer_is_current(bb: Blackboard, probe: FeedProbe) -> None:
    """After a question left unanswered on the wire (its reply would say ``0-0``): a new
    write, then the next answer must name it."""
    await bb.scope(A).write("after")
    _, ids = await probe.around([A], lambda: None)
    assert ids == await bb.reads.newest_event_ids([A]) and ids[A] != "0-0"


async def test_work_that_raises_leaves_no_reply_for_the_next_question(bb: Blackboard) -> None:
    probe = bb.feed_probe

    def boom() -> None:
        raise ValueError("work failed")

    with pytest.raises(ValueError, match="work failed"):
        await probe.around([A], boom)
    # the unread answer to the failed call would say 0-0; the next answer must be current
    await assert_next_answer_is_current(bb, probe)


async def test_a_cancelled_wait_leaves_no_reply_for_the_next_question(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    probe = bb.feed_probe
    await probe.around([A], lambda: None)  # open the socket
    # the answer cannot come while Redis holds every client (UNPAUSE would be held too)
    clean_redis.execute_command("CLIENT", "PAUSE", 600, "ALL")
    task = asyncio.create_task(probe.around([A], lambda: None))
    await asyncio.sleep(0.2)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await assert_next_answer_is_current(bb, probe)  # its write runs once the pause ends


async def test_a_killed_socket_falls_back_then_reconnects(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    probe = bb.feed_probe
    await probe.around([A], lambda: None)
    assert probe._side.sock is not None
    host, port = probe._side.sock._sock.getsockname()[:2]
    assert clean_redis.client_kill(f"{host}:{port}")
    await bb.scope(A).write("x")
    _, ids = await probe.around([A], lambda: None)  # the dead socket: through the pool
    assert ids == await bb.reads.newest_event_ids([A])
    assert probe.pooled == 1
    _, ids = await probe.around([A], lambda: None)  # a new socket
    assert ids == await bb.reads.newest_event_ids([A]) and probe.direct == 2


async def test_an_unloaded_script_is_loaded_through_the_pool(
    bb: Blackboard, clean_redis: redis.Redis
) -> None:
    probe = bb.feed_probe
    await bb.scope(A).write("x")
    clean_redis.script_flush()
    _, ids = await probe.around([A], lambda: None)  # NOSCRIPT: the pool's run loads it
    assert ids == await bb.reads.newest_event_ids([A]) and probe.pooled == 1
    _, again = await probe.around([A], lambda: None)
    assert again == ids and probe.direct == 1


async def test_a_confined_agent_probes_as_itself(bb: Blackboard, redis_url: str) -> None:
    admin = AclAdmin(bb)
    g = await admin.grant("a1", ("t1",), rotate=True)
    agent = await Blackboard.connect(redis_url, username=g.username, password=g.password)
    try:
        await agent.scope(A).write("mine")
        await bb.scope("collective").write("for everyone")
        probe = agent.feed_probe
        # collective is read-only to agents: the question must count its keys as read
        _, ids = await probe.around([A, T, "collective"], lambda: None)
        assert ids == await bb.reads.newest_event_ids([A, T, "collective"]) and probe.direct == 1
        got = await agent.reads.newest_event_ids(["collective"])
        assert got == {"collective": ids["collective"]}
        # the probe's socket is logged in as the agent: another agent's feed is refused by
        # Redis, on the probe's socket and then through the pool
        with pytest.raises(AccessDenied, match=r"ACL|NOPERM|permission"):
            await probe.around(["agent:a2:working"], lambda: None)
        assert probe.direct == 1
    finally:
        await agent.close()
        await admin.revoke("a1")


async def test_a_confined_agent_without_the_script_still_gets_answers(
    bb: Blackboard, redis_url: str, clean_redis: redis.Redis
) -> None:
    admin = AclAdmin(bb)
    g = await admin.grant("a1", (), rotate=True)
    agent = await Blackboard.connect(redis_url, username=g.username, password=g.password)
    try:
        await agent.scope(A).write("mine")
        clean_redis.script_flush()  # a restart's empty script cache; agents may not load
        _, ids = await agent.feed_probe.around([A], lambda: None)
        assert ids == await bb.reads.newest_event_ids([A]) and ids[A] != "0-0"
        assert agent.feed_probe.pooled == 1
    finally:
        await agent.close()
        await admin.revoke("a1")


async def test_a_refused_login_stops_the_probe_not_the_caller(
    bb: Blackboard, redis_url: str
) -> None:
    admin = AclAdmin(bb)
    g = await admin.grant("a1", (), rotate=True)
    agent = await Blackboard.connect(redis_url, username=g.username, password=g.password)
    try:
        # A new password: the pool's connections stay logged in, the probe's new socket
        # is refused; the caller is answered through the pool and the probe stops trying.
        await admin.grant("a1", (), rotate=True)
        _, ids = await agent.feed_probe.around([A], lambda: None)
        assert ids == await bb.reads.newest_event_ids([A])
        assert agent.feed_probe._side.address is None and agent.feed_probe.pooled == 1
    finally:
        await agent.close()
        await admin.revoke("a1")


async def test_a_cluster_asks_through_the_pool(cbb: Blackboard) -> None:
    await cbb.scope(A).write("x")
    _, ids = await cbb.feed_probe.around([A, T], lambda: None)
    assert ids == await cbb.reads.newest_event_ids([A, T])
    assert (cbb.feed_probe.direct, cbb.feed_probe.pooled) == (0, 1)
