"""Quotas: how many live entries and bytes a scope and its owner may hold (docs/security.md
"Quotas").

The write scripts enforce them (``want_quota`` in ``scripts/_lib.lua``) from counters they
move themselves; this module sets the owners' limits, reads the counters, and lets
``blackboard check`` verify and rebuild them and find keys an agent invented under its own
prefix with raw commands (outside the key layout of :mod:`blackboard.keys`).

Owner: the agent or team a scope belongs to (``agent:<a>:...`` -> ``agent:<a>``,
``team:<t>...`` -> ``team:<t>``); ``collective`` and other service scopes have none. A
script can only touch keys of one partition (one cluster slot), so the owner's counters
and limits are per partition: an owner may hold up to its limit in *each* partition its
scopes fall into, ``partitions x limit`` in all (exact on one partition).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from . import keys as K
from .errors import InvalidArgument

__all__ = ["DEFAULT_OWNER_BYTES", "DEFAULT_OWNER_ENTRIES", "DEFAULT_SCOPE_BYTES", "OwnerQuota",
           "owner_of", "owner_quota", "set_owner_quota"]

#: Defaults, as in ``scripts/_lib.lua`` (generous: they stop a runaway, not normal use).
DEFAULT_SCOPE_BYTES = 64 << 20
DEFAULT_OWNER_ENTRIES = 1_000_000
DEFAULT_OWNER_BYTES = 512 << 20

#: The entry fields whose bytes count (``entry_bytes`` in ``scripts/_lib.lua``).
COUNTED_FIELDS = ("value", "metadata", "tags", "source")

_OWNER = re.compile(r"^((?:agent|team):[^:]+)")


def owner_of(scope_id: str) -> str | None:
    """The owner whose quota a scope's entries count against, or None."""
    m = _OWNER.match(scope_id)
    return m.group(1) if m else None


@dataclass(frozen=True, slots=True)
class OwnerQuota:
    """An owner's limits, per partition; 0 = no limit."""

    entries: int = DEFAULT_OWNER_ENTRIES
    bytes: int = DEFAULT_OWNER_BYTES

    def __post_init__(self) -> None:
        if self.entries < 0 or self.bytes < 0:
            raise InvalidArgument("quota entries and bytes must be >= 0 (0 = no limit)")


def _check_owner(owner: str) -> str:
    if owner_of(owner) != owner:
        raise InvalidArgument(f"owner must be agent:<id> or team:<id>: {owner!r:.80}")
    return owner


async def set_owner_quota(bb: Any, owner: str, quota: OwnerQuota) -> None:
    """Set an owner's quota in every partition (the owner's cfg hash
    ``bb:{pN}:cfg:<owner>``, which a confined agent may only read: only the service or an
    admin user can raise its own limits)."""
    _check_owner(owner)
    for p in range(bb.partitions):
        await bb.client.hset(K.PartitionKeys(p).cfg(owner),
                             mapping={"quota_entries": quota.entries, "quota_bytes": quota.bytes})


async def owner_quota(bb: Any, owner: str) -> OwnerQuota:
    """The owner's quota as the scripts read it (partition 0's; all are set alike)."""
    got = await bb.client.hmget(K.PartitionKeys(0).cfg(_check_owner(owner)),
                                "quota_entries", "quota_bytes")
    return OwnerQuota(int(got[0]) if got[0] is not None else DEFAULT_OWNER_ENTRIES,
                      int(got[1]) if got[1] is not None else DEFAULT_OWNER_BYTES)
