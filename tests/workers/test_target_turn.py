"""Firings of team-belief edges into one target take turns (workers.target_turn)."""

from __future__ import annotations

import asyncio

import pytest

from blackboard import Blackboard
from blackboard import keys as K
from blackboard.lease import Lease
from blackboard.tasks import cancel_and_wait
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


async def test_a_turn_ends_with_its_firing_when_the_renewal_swallows_a_cancel(
    bb: Blackboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancellation that lands while a renewal call is in flight can be swallowed: Python
    3.11's ``asyncio.wait_for`` (redis-py's send uses it) returns the call's result when the
    call finished first. The turn must still end with its firing. It used to be ended by
    ``cancel()`` alone: the renewal then renewed the finished firing's turn forever, the
    firing's exit waited on it, and every firing into the target found it busy (the burst
    test's collective buffer held hundreds of beliefs, nothing in flight, for 240 s)."""
    target = "team:t4:ltm:semantic"
    real = Lease.acquire
    renewing, swallow = asyncio.Event(), True

    async def acquire(self: Lease, token: str, ttl_ms: int) -> bool:
        if renewing.is_set() or await self.bb.client.exists(self.key):
            renewing.set()  # a renewal: its call is in flight
            try:
                await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                if not swallow:
                    raise  # (only so that the old code's test can end)
        return await real(self, token, ttl_ms)

    monkeypatch.setattr(Lease, "acquire", acquire)

    async def firing() -> None:
        async with target_turn(bb, A1, target, ttl_ms=60) as mine:
            assert mine
            await renewing.wait()  # the firing ends while its turn is being renewed

    task = asyncio.create_task(firing())
    try:
        done, _ = await asyncio.wait({task}, timeout=2)
        assert done, "the firing's turn is still being renewed after it ended"
        task.result()
    finally:
        swallow = False
        await cancel_and_wait([task])
    monkeypatch.undo()
    assert not await bb.client.exists(K.target_lease(target))  # released, not renewed
    async with target_turn(bb, A2, target, ttl_ms=60) as after:
        assert after
