"""Issue 23: the index role's queue (``bb:{pN}:unembedded``) under a confined agent."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from blackboard import AccessDenied, Blackboard
from blackboard.keys import PartitionKeys


async def test_agent_writes_queue_for_the_index_role_and_can_do_no_more(
    bb: Blackboard, agent_board: Callable[..., Awaitable[Blackboard]]
) -> None:
    """With the index role's flag set, an agent's write and update queue through its
    scripts and its own vector is stored; the queue it may neither read nor trim."""
    agent = await agent_board("q1")
    sc = agent.scope("agent:q1:working")
    await bb.vector_queue(sc.partition).enable()
    e = await sc.write("to embed")
    await sc.update(e.id, value="changed")
    q = PartitionKeys(sc.partition).unembedded
    assert await bb.client.zscore(q, f"{sc.id}|{e.id}") is not None
    # its own vector is stored; leaving the queue is the index role's (pcall in embed.lua)
    assert await sc.set_embeddings([(e.id, 2, b"\0" * 16)], "mine") == 1
    assert await bb.client.zscore(q, f"{sc.id}|{e.id}") is not None
    for attempt in (agent.client.zrange(q, 0, -1), agent.client.zrem(q, "x"),
                    agent.client.delete(q)):
        with pytest.raises(AccessDenied):
            await attempt
