"""Batches of writes that land whole or not at all, whatever process dies.

Every item of a batch is validated and encoded before anything is sent; the calls of
``write.lua`` then go in one MULTI/EXEC (:func:`blackboard.scripts.run_script_many` with
``atomic``). Redis runs none of the queued calls before EXEC and drops the queue when the
connection closes, so a writer killed mid-batch leaves no item, and once EXEC is in, Redis
runs every call without interleaving another client's command. On a Redis Cluster one
MULTI/EXEC reaches one slot only, i.e. one partition: a batch whose scopes live in several
partitions is refused there, before anything is written (docs/architecture.md, "Batches").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import tracing
from .entry import Entry
from .errors import InvalidArgument
from .request import EncodedWrite, WriteRequest, encode_write, entry_from_write_reply
from .scripts import raise_for_script_error, run_script_many

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["write_batch"]


def _one_partition_on_cluster(bb: Blackboard, scope_ids: Sequence[str]) -> None:
    parts = {bb.scope(s).partition: s for s in scope_ids}
    if bb.cluster and len(parts) > 1:
        named = ", ".join(f"{s!r} (partition {p})" for p, s in sorted(parts.items()))
        raise InvalidArgument(
            "a batch on a Redis Cluster is atomic within one partition only; its scopes "
            f"span {len(parts)}: {named}; send one batch per scope"
        )


async def write_batch(
    bb: Blackboard, groups: Sequence[tuple[str, Sequence[WriteRequest]]]
) -> list[list[Entry]]:
    """Write every ``(scope id, requests)`` group in one transaction; the entries of each
    group in order. Raises before writing when any item is invalid.

    A refusal by the script itself (a scope full under ``on_full="reject"``, keys damaged
    by raw commands) is raised for the first refused item; the transaction has then run
    the other items, which a retry with the same ids leaves unchanged.
    """
    if tracing.ENABLED:
        n = sum(len(reqs) for _, reqs in groups)
        with tracing.span("blackboard.write_many", {"blackboard.entries": n}):
            return await _write_batch(bb, groups, tracing.traceparent())
    return await _write_batch(bb, groups, None)


async def _write_batch(
    bb: Blackboard, groups: Sequence[tuple[str, Sequence[WriteRequest]]], tp: str | None
) -> list[list[Entry]]:
    # Traced, every item carries the batch span's context: one span per batch, not per item.
    encoded: list[tuple[str, list[EncodedWrite]]] = []
    for sid, reqs in groups:
        sc = bb.scope(sid)
        encoded.append((sc.id, [
            encode_write(r, sc.id, bb.settings.max_entry_bytes, tp) for r in reqs
        ]))
    calls = [
        (bb.scope(sid).keys.script_keys(), e.args) for sid, encs in encoded for e in encs
    ]
    if not calls:
        return [[] for _ in groups]
    _one_partition_on_cluster(bb, [sid for sid, _ in encoded])
    replies = iter(await run_script_many(
        bb.client, "write", calls, atomic=True, wait=bb.wait,
        what=f"a batch of {len(calls)} entries",
    ))
    out: list[list[Entry]] = []
    for sid, encs in encoded:
        got: list[Entry] = []
        for enc in encs:
            reply = next(replies)
            if isinstance(reply, Exception):
                raise_for_script_error(reply, enc.entry_id, sid)
            got.append(entry_from_write_reply(sid, enc, reply))
        out.append(got)
    return out
