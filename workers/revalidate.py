"""The maintenance role's ``revalidate`` job: each live belief of the partition's semantic
scopes whose revalidation is due gets its freshness and status recomputed
(:func:`consolidation.revalidation.revalidated`).

Idempotent: each update is compare-and-set on the version read (a belief changed meanwhile
is left for the next run) with an op id of that version, so a retried or repeated run
changes nothing more; a belief is due again only one cadence of its kind later.
"""

from __future__ import annotations

import logging

from blackboard import Blackboard, BlackboardError, VersionConflict
from consolidation.revalidation import revalidated
from memory import MemoryLevel, parse_scope

__all__ = ["LIMIT", "revalidate_scopes"]

log = logging.getLogger(__name__)

#: Beliefs read per scope and run (newest first).
LIMIT = 2000


def _semantic(scope_id: str) -> bool:
    try:
        return parse_scope(scope_id).level is MemoryLevel.SEMANTIC
    except BlackboardError:  # a scope outside the memory grammar has no level
        return False


async def revalidate_scopes(
    bb: Blackboard, scope_ids: list[str], dry_run: bool = False
) -> dict[str, int]:
    """Revalidate the due beliefs of the semantic ones of ``scope_ids``: scope -> count."""
    counts: dict[str, int] = {}
    now = bb.now_ms()
    for scope_id in scope_ids:
        if not _semantic(scope_id):
            continue
        scope = bb.scope(scope_id)
        n = 0
        for e in await scope.entries(all_of=["fact"], limit=LIMIT):
            got = revalidated(e, now)
            if got is None:
                continue
            n += 1
            if dry_run:
                continue
            meta, value = got
            fields = {"metadata": meta} | ({"value": value} if value is not None else {})
            try:
                await scope.update(e.id, expected_version=e.version,
                                   op_id=f"rv{e.version}-{e.id}"[:64], **fields)
            except VersionConflict:
                n -= 1  # changed meanwhile: the next run sees the new version
        if n:
            counts[scope_id] = n
    return counts
