"""Reading many entries of one partition, across its scopes, in one command.

This is the dataflow's batch read: a pending buffer names entries of several scopes of the
same partition, and one script call (``get_entries.lua``, HMGET of the fields an
:class:`Entry` needs) replaces a pipelined HGETALL per entry, whose client-side packing and
parsing dominated a worker's read (measured: 6 against 18 us per entry, client and server).
"""

from __future__ import annotations

import logging
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

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EntryRef:
    """An entry named by its scope and id."""

    scope: str
    entry_id: str


def _key_prefix(bb: Blackboard, partition: int, scope: str) -> str:
    """The entry-key prefix of ``scope``; InvalidArgument unless it is a scope of ``partition``."""
    validate_scope(scope)
    if partition_of(scope, bb.partitions) != partition:
        raise InvalidArgument(f"scope {scope!r} is not in partition {partition}")
    return ScopeKeys(scope, partition).entry("")


async def fetch_entries(
    bb: Blackboard,
    partition: int,
    refs: Sequence[EntryRef],
    *,
    skip_invalid: bool = False,
    retained: bool = False,
) -> list[Entry | None]:
    """The live entries ``refs`` name, in order; None for a missing or expired one.

    ``retained``: the dataflow's view — also entries that expired or were evicted (retired)
    and are kept until every edge has consolidated them.

    Every ref must name a valid scope of ``partition`` and a valid entry id (their keys
    share the partition's slot, which a single script call needs on a cluster); anything
    else raises :class:`InvalidArgument` before Redis is touched, or with ``skip_invalid``
    (refs that came from untrusted hints) is logged and read as None.
    """
    keys: list[str | None] = []
    prefixes: dict[str, str | InvalidArgument] = {}  # a batch names few scopes
    for ref in refs:
        prefix = prefixes.get(ref.scope)
        if prefix is None:
            try:
                prefix = _key_prefix(bb, partition, ref.scope)
            except InvalidArgument as exc:
                prefix = exc
            prefixes[ref.scope] = prefix
        err = prefix if isinstance(prefix, InvalidArgument) else None
        if err is None and not is_entry_id(ref.entry_id):
            err = InvalidArgument(
                f"entry id must match [0-9A-Za-z_-]{{1,64}}: {ref.entry_id!r:.80}"
            )
        if err is None:
            keys.append(f"{prefix}{ref.entry_id}")
        elif skip_invalid:
            log.warning("skipping a reference to an invalid scope/id (%s): %r", err, ref)
            keys.append(None)
        else:
            raise err
    valid = [k for k in keys if k is not None]
    if not valid:
        return [None] * len(keys)
    fields = [*ENTRY_FIELDS, "retired"]
    rows = iter(await run_script(bb.client, "get_entries", valid, fields))
    now = bb.now_ms()
    out: list[Entry | None] = []
    for ref, key in zip(refs, keys, strict=True):
        row = next(rows) if key is not None else None
        if not row or row[0] is None:  # invalid ref, or no id: the entry does not exist
            out.append(None)
            continue
        e = decode_entry_values(ref.scope, row[:-1])
        out.append(e if retained or (row[-1] is None and not e.expired(now)) else None)
    return out
