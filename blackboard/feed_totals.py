"""How many events each scope's feed has ever had appended (Redis 7's ``entries-added`` of
XINFO STREAM): a counter that trimming does not lower, so its change over time is the
scope's event rate (the dashboard's throughput chart samples it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .errors import AccessDenied, BlackboardError

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["feed_totals"]


async def feed_totals(bb: Blackboard, scope_ids: Sequence[str]) -> list[int]:
    """Events ever appended to each scope's feed, in order (0: no feed yet); one round
    trip. AccessDenied when the connection's user may not read one of the feeds."""
    if not scope_ids:
        return []
    async with bb.client.pipeline(transaction=False) as pipe:
        for s in scope_ids:
            pipe.xinfo_stream(bb.scope(s).keys.feed)
        replies: list[Any] = await pipe.execute(raise_on_error=False)
    out = []
    for r in replies:
        if isinstance(r, AccessDenied):
            raise r
        if isinstance(r, BlackboardError | Exception) or not isinstance(r, dict):
            out.append(0)  # no such key: the scope has had no event yet
            continue
        out.append(int(r.get("entries-added") or r.get("length") or 0))
    return out
