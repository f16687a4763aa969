"""Firings of team-belief edges into one target take turns (workers.target_turn)."""

from __future__ import annotations

from blackboard import Blackboard
from memory import MemorySubscription
from workers.target_turn import one_at_a_time, target_turn

A1 = MemorySubscription("agent:a1:ltm:semantic", "team:t1:ltm:semantic", "team_beliefs")
A2 = MemorySubscription("agent:a2:ltm:semantic", "team:t1:ltm:semantic", "team_beliefs")
SUMMARY = MemorySubscription("agent:*:working", "agent:{1}:stm", "summarize")


async def test_two_members_edges_take_turns_on_their_team(bb: Blackboard) -> None:
    assert one_at_a_time(A1) and not one_at_a_time(SUMMARY)
    async with target_turn(bb, A1, "team:t1:ltm:semantic") as first:
        assert first
        async with target_turn(bb, A2, "team:t1:ltm:semantic") as second:
            assert not second  # a1's firing drafts into t1 now
        async with target_turn(bb, A2, "team:t2:ltm:semantic") as other:
            assert other  # another team is another turn
        async with target_turn(bb, SUMMARY, "agent:a1:stm") as plain:
            assert plain  # edges that need no turn never wait
    async with target_turn(bb, A2, "team:t1:ltm:semantic") as after:
        assert after  # released on exit



async def test_a_turn_is_renewed_while_held_and_a_dead_holders_lapses(bb: Blackboard) -> None:
    """A holder drafting longer than the TTL keeps its turn; one killed mid-batch (no
    renewal) frees the target a TTL later, not a fixed minute later."""
    import asyncio

    from blackboard import keys as K
    from blackboard.lease import Lease

    target = "team:t3:ltm:semantic"
    async with target_turn(bb, A1, target, ttl_ms=300) as first:
        assert first
        await asyncio.sleep(0.6)  # two TTLs: renewed meanwhile
        async with target_turn(bb, A2, target, ttl_ms=300) as second:
            assert not second
    # a holder that died holding the turn: the lease without its renewal
    assert await Lease(bb, K.target_lease(target)).acquire("dead", 300)
    async with target_turn(bb, A2, target, ttl_ms=300) as blocked:
        assert not blocked
    await asyncio.sleep(0.4)
    async with target_turn(bb, A2, target, ttl_ms=300) as after:
        assert after
