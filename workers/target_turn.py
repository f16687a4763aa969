"""One drafter at a time into a target that several edges share a prior in.

Team beliefs (consolidation.team_beliefs) and the team's pooled statements
(consolidation.team) come from one edge per member, each buffered in
its member's partition and fired by whichever worker holds that partition: two firings can
run at once, both read the team's belief as their prior, and the second write would
supersede the first's draft without having seen it (a member's view lost). A transformer
that sets ``one_target_at_a_time`` has its firings into one target take turns under a
lease (``bb:lease:target:<target>``): the prior read and the draft written by one firing
happen while no other firing of such an edge drafts into that target. A firing that finds
the lease held is tried again shortly (not a failure); a holder that dies frees it after
:data:`TURN_TTL_MS`.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator

from blackboard import Blackboard
from blackboard import keys as K
from blackboard.lease import Lease
from consolidation.transformer import get_transformer
from memory.subscriptions import MemorySubscription

__all__ = ["TURN_RETRY_S", "TURN_TTL_MS", "one_at_a_time", "target_turn"]

#: How long a turn lasts at most (a transformer run and its write take far less).
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
async def target_turn(bb: Blackboard, edge: MemorySubscription,
                      target: str) -> AsyncIterator[bool]:
    """Yield True when this firing may draft into ``target`` now (always, for an edge that
    need not take turns), False when another holds the turn; released on exit."""
    if not one_at_a_time(edge):
        yield True
        return
    lease, token = Lease(bb, K.target_lease(target)), uuid.uuid4().hex
    if not await lease.acquire(token, TURN_TTL_MS):
        yield False
        return
    try:
        yield True
    finally:
        await lease.release(token)
