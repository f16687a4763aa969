"""A second connection to the server of an open :class:`~blackboard.board.Blackboard`, for
code running on another event loop (a client is bound to the loop it was opened on)."""

from __future__ import annotations

from .board import Blackboard

__all__ = ["reconnect"]


async def reconnect(bb: Blackboard) -> Blackboard:
    """A new Blackboard on ``bb``'s server with its settings and credentials (the caller
    closes it). A cluster client's credentials come from the settings alone."""
    kw = bb.client.connection_pool.connection_kwargs if not bb.cluster else {}
    return await Blackboard.connect(
        bb.settings.redis_url, settings=bb.settings,
        username=kw.get("username"), password=kw.get("password"),
    )
