"""Fixtures of the security tests: admin board, agent users, snapshots of the whole Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from blackboard import Blackboard
from blackboard.acl import AclAdmin


@pytest.fixture()
async def agent_board(
    bb: Blackboard, redis_url: str
) -> AsyncIterator[Callable[..., Awaitable[Blackboard]]]:
    """``await agent_board("a", teams=["t"])`` -> a Blackboard connected as agent a's user
    (granted with the ``bb`` admin board); users are revoked afterwards."""
    admin = AclAdmin(bb)
    opened: list[tuple[str, Blackboard]] = []

    async def make(agent: str, teams: tuple[str, ...] | list[str] = ()) -> Blackboard:
        g = await admin.grant(agent, teams, rotate=True)
        board = await Blackboard.connect(redis_url, username=g.username, password=g.password)
        opened.append((agent, board))
        return board

    yield make
    for agent, board in opened:
        await board.close()
        await admin.revoke(agent)
