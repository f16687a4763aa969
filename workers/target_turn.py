"""One drafter at a time into a target that several edges share a prior in.

Team beliefs (consolidation.team_beliefs) and the team's pooled statements
(consolidation.team) come from one edge per member, each buffered in
its member's partition and fired by whichever worker holds that partition: two firings can
run at once, both read the team's belief as their prior, and the second write would
supersede the first's draft without having seen it (a member's view lost). A transformer
that sets ``one_target_at_a_time`` has its firings into one target take turns under a
lease (``bb:lease:target:<target>``): the prior read and the draft written by one firing
happen while no other firing of such an edge drafts into that target. A firing that finds
the lease held is tried again shortly (not a failure). The holder renews its turn every
third of its ``ttl_ms`` while it drafts, so a holder killed mid-batch frees the target
``ttl_ms`` later: workers pass their partition lease TTL (5 s by default), the same bound
as a dead worker's partitions, instead of blocking every member's (or, for
``collective``, every agent's) firings for a fixed minute.

The renewal stops on a flag the firing sets when it ends, never by cancellation alone: a
cancellation that lands while a renewal call is in flight can be swallowed (Python 3.11's
``asyncio.wait_for``, which redis-py's send uses, returns the call's result when the call
finished first; see :mod:`blackboard.tasks`). Cancelled, such a renewal went on renewing a
finished firing's turn forever while the firing's exit waited on it: every other firing
into the target found it busy, with nothing in flight, and never said so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator

from blackboard import Blackboard
from blackboard import keys as K
from blackboard.lease import Lease
from consolidation.transformer import get_transformer
from memory.subscriptions import MemorySubscription

__all__ = ["TURN_RETRY_S", "TURN_TTL_MS", "one_at_a_time", "target_turn"]

log = logging.getLogger(__name__)

#: How long a turn lasts without renewal unless the caller says (workers pass their
#: partition lease TTL); renewed while its holder drafts.
TURN_TTL_MS = 60_000
#: How soon a firing that found the target busy is tried again.
TURN_RETRY_S = 0.25


def one_at_a_time(edge: MemorySubscription) -> bool:
    """Whether ``edge``'s transformer asks its firings into one target to take turns."""
    try:
        t = get_transformer(edge.transformer)
    except LookupError:  # a transformer registered outside the catalog
        return False
    return bool(getattr(t, "one_target_at_a_time", False))


@contextlib.asynccontextmanager
async def target_turn(bb: Blackboard, edge: MemorySubscription, target: str,
                      ttl_ms: int = TURN_TTL_MS) -> AsyncIterator[bool]:
    """Yield True when this firing may draft into ``target`` now (always, for an edge that
    need not take turns), False when another holds the turn; renewed while held, released
    on exit."""
    if not one_at_a_time(edge):
        yield True
        return
    lease, token = Lease(bb, K.target_lease(target)), uuid.uuid4().hex
    if not await lease.acquire(token, ttl_ms):
        yield False
        return
    ended = asyncio.Event()
    renewing = asyncio.create_task(_renew(lease, token, ttl_ms, ended))
    try:
        yield True
    finally:
        ended.set()
        try:
            # At most the renewal call in flight: released after it, which would
            # otherwise take the turn again.
            await renewing
        finally:
            await lease.release(token)


async def _renew(lease: Lease, token: str, ttl_ms: int, ended: asyncio.Event) -> None:
    """Extend the turn every third of its TTL until ``ended`` is set; a failed renewal is
    logged and tried again (the turn lapses only if renewals fail for a whole TTL)."""
    while not ended.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ended.wait(), ttl_ms / 3000)
        if ended.is_set():
            return
        try:
            await lease.acquire(token, ttl_ms)
        except Exception:
            log.warning("could not renew the turn on %s; trying again", lease.key)
