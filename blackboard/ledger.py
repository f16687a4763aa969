"""The transfer ledger of a scope: which originals a generational transfer has copied into
it, ever (``ScopeKeys.transferred``). A copy the successor has forgotten since, or that
decayed away, is in the ledger still, so a later transfer never brings it back. Written
after the copies (a crash between leaves copies the next run finds by their deterministic
ids, and records); only the service user may read or write it (no agent ACL pattern
covers ``bb:{pN}:transfers:*``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["record", "recorded"]


async def recorded(bb: Blackboard, scope_id: str, members: Sequence[str]) -> list[bool]:
    """Whether each of ``members`` (``<source scope>|<original id>``) was copied into
    ``scope_id`` before."""
    if not members:
        return []
    got = await bb.client.smismember(bb.scope(scope_id).keys.transferred, list(members))
    return [bool(x) for x in got]


async def record(bb: Blackboard, scope_id: str, members: Sequence[str]) -> None:
    """Record ``members`` as copied into ``scope_id``."""
    if members:
        await bb.client.sadd(bb.scope(scope_id).keys.transferred, *members)
