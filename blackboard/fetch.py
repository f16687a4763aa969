"""Reading many entries of one partition, across its scopes, in one command.

This is the dataflow's batch read: a pending buffer names entries of several scopes of the
same partition, and one script call (``get_entries.lua``, HMGET of the fields an
:class:`Entry` needs) replaces a pipelined HGETALL per entry, whose client-side packing and
parsing dominated a worker's read (measured: 6 against 18 us per entry, client and server).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .entry import ENTRY_FIELDS, Entry, decode_entry_values
from .errors import InvalidArgument
from .ids import is_entry_id
from .keys import ScopeKeys, partition_of
from .scripts import run_script
from .validation import validate_scope

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["EntryRef", "fetch_entries"]


@dataclass(frozen=True, slots=True)
class EntryRef:
    """An entry named by its scope and id."""

    scope: str
    entry_id: str


async def fetch_entries(
    bb: Blackboard, partition: int, refs: Sequence[EntryRef]
) -> list[Entry | None]:
    """The live entries ``refs`` name, in order; None for a missing or expired one.

    Every ref must name a valid scope of ``partition`` and a valid entry id (their keys
    share the partition's slot, which a single script call needs on a cluster); anything
    else raises :class:`InvalidArgument` before Redis is touched.
    """
    keys: list[str] = []
    prefixes: dict[str, str] = {}  # scope -> key prefix; a batch names few scopes
    for ref in refs:
        prefix = prefixes.get(ref.scope)
        if prefix is None:
            validate_scope(ref.scope)
            if partition_of(ref.scope, bb.partitions) != partition:
                raise InvalidArgument(f"scope {ref.scope!r} is not in partition {partition}")
            prefix = prefixes[ref.scope] = ScopeKeys(ref.scope, partition).entry("")
        if not is_entry_id(ref.entry_id):
            raise InvalidArgument(
                f"entry id must match [0-9A-Za-z_-]{{1,64}}: {ref.entry_id!r:.80}"
            )
        keys.append(prefix + ref.entry_id)
    if not keys:
        return []
    rows = await run_script(bb.client, "get_entries", keys, list(ENTRY_FIELDS))
    now = int(time.time() * 1000)
    out: list[Entry | None] = []
    for ref, row in zip(refs, rows, strict=True):
        if not row or row[0] is None:  # no id: the entry does not exist
            out.append(None)
            continue
        e = decode_entry_values(ref.scope, row)
        out.append(None if e.expired(now) else e)
    return out
