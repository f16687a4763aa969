"""Generational transfer: a successor agent starts with its predecessor's long-term memory.

``AgentMemory.transfer_to(successor, levels=...)`` (and ``blackboard transfer A B``) copies
every current entry of the predecessor's long-term levels (episodic, semantic and
procedural by default) into the successor's scope of the same level. Each copy carries its
provenance: metadata ``transferred_from`` (the original's scope), ``original_id``,
``original_key`` (when it had one), ``original_created_at`` and ``predecessor``, and its
``source`` ends with the original's id. Its value, tags, importance, current strength,
remaining TTL and stored vector are the original's.

What is not copied, and why:
- levels other than the long-term ones: sensory, working and stm are the agent's
  transient state, and the successor's own edges (stm -> ltm) would consolidate a copied
  stm a second time;
- superseded entries (a belief's history): the write path cannot mark a copy superseded,
  so it would read as current; the successor inherits what its predecessor holds now;
- the logical key: a copy with the key would update the successor's own holder of that
  key in place. It is kept as ``original_key``.

Idempotent: each copy's id is ``deterministic_id("generation", source scope, target scope,
original id)``, so a rerun -- after a crash mid-way, or concurrently -- finds the copies
already made and writes only the rest; and every original copied is recorded in the
successor scope's transfer ledger (:mod:`blackboard.ledger`), so a copy the successor has
forgotten since, or that decayed away, is never brought back by a later transfer. Copies go
in pages, each one transaction (``Scope.write_many``): a page is there whole or not at all;
the ledger is written after its page (a crash between: the next run finds the copies by
their ids and records them).

Who may run it: the successor's scopes are writable only by the successor's Redis user and
the service user, and the predecessor's readable only by the predecessor's and the service
user (``blackboard.acl.agent_rules``). Neither agent can therefore transfer by itself under
ACL confinement: it is an operator action, run on the service connection (``blackboard
transfer A B``; docs/security.md, "Generational transfer"). A confined caller is refused by
Redis on its first write into the successor's scope and nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from blackboard import AccessDenied, Entry, InvalidArgument, NotFound, deterministic_id, ledger
from blackboard.acl import AclAdmin
from blackboard.decay import strength_at
from blackboard.request import WriteRequest

from .levels import LONG_TERM, MemoryLevel
from .naming import agent_scope
from .teams import teams_of

if TYPE_CHECKING:
    from .agent import AgentMemory

__all__ = ["DEFAULT_LEVELS", "TransferReport", "transfer"]

#: What a transfer copies unless told otherwise: the whole long-term memory.
DEFAULT_LEVELS: tuple[MemoryLevel, ...] = (
    MemoryLevel.EPISODIC, MemoryLevel.SEMANTIC, MemoryLevel.PROCEDURAL)
#: Entries read and written per round trip (one transaction per page of copies).
PAGE = 200
#: The edge name in every copy's deterministic id.
EDGE = "generation"


@dataclass(slots=True)
class TransferReport:
    """What one transfer did, per level: ``copied`` (written now), ``present`` (copied
    before, by an earlier run: still there, or since forgotten by the successor),
    ``skipped`` (superseded history, not copied)."""

    predecessor: str
    successor: str
    levels: tuple[str, ...]
    copied: dict[str, int] = field(default_factory=dict)
    present: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def total_copied(self) -> int:
        return sum(self.copied.values())

    def to_json(self) -> dict[str, Any]:
        return {"predecessor": self.predecessor, "successor": self.successor,
                "levels": list(self.levels), "copied": dict(self.copied),
                "present": dict(self.present), "skipped": dict(self.skipped),
                "total_copied": self.total_copied}


def transfer_levels(levels: Iterable[MemoryLevel | str] | None) -> tuple[MemoryLevel, ...]:
    """The levels asked for, checked: long-term ones only, at least one, in level order."""
    if levels is None:
        return DEFAULT_LEVELS
    if isinstance(levels, str):
        levels = [levels]
    out: set[MemoryLevel] = set()
    for x in levels:
        lvl = MemoryLevel.from_segment(str(x))
        if lvl is None:
            try:
                lvl = MemoryLevel(str(x))
            except ValueError:
                lvl = None
        if lvl not in LONG_TERM:
            raise InvalidArgument(
                f"levels: {x!r:.40} is not a long-term level; transfer copies "
                f"{', '.join(v.value for v in DEFAULT_LEVELS)}")
        out.add(lvl)
    if not out:
        raise InvalidArgument("levels: name at least one long-term level")
    return tuple(lvl for lvl in MemoryLevel if lvl in out)


async def _granted(mem: AgentMemory, agent_id: str) -> tuple[str, ...] | None:
    """The agent's recorded ACL grant (its teams), None when it has none."""
    try:
        return tuple(await AclAdmin(mem.bb).teams_of(agent_id))
    except NotFound:
        return None


async def check_successor(mem: AgentMemory, successor: str) -> None:
    """Refuse a transfer to oneself, to an agent not granted where grants are in use, and
    to an agent in a team the caller does not belong to."""
    if not isinstance(successor, str):
        raise InvalidArgument("successor: an agent id")
    agent_scope(successor, MemoryLevel.EPISODIC)  # validates the id (InvalidScope)
    if successor == mem.agent_id:
        raise InvalidArgument(f"successor: agent {successor!r} cannot transfer memory to itself")
    try:
        if await _granted(mem, mem.agent_id) is not None and await _granted(
                mem, successor) is None:
            raise NotFound(f"successor: agent {successor!r} has no ACL grant "
                           f"(`blackboard acl grant {successor} --team ...` first)")
        theirs = set(await teams_of(mem.bb, successor))
    except AccessDenied as exc:
        raise AccessDenied(
            f"transfer to {successor!r} needs the service user (it reads the grants and "
            "writes another agent's scopes): run `blackboard transfer` as the operator"
        ) from exc
    foreign = sorted(theirs - set(mem.teams))
    if foreign:
        raise AccessDenied(
            f"agent {mem.agent_id!r} may not transfer to {successor!r}: it belongs to "
            f"team(s) {', '.join(foreign)} that {mem.agent_id!r} is not in")


def _copy(e: Entry, source: str, target: str, predecessor: str, now: int,
          policy: Any) -> WriteRequest:
    meta = {**e.metadata, "transferred_from": source, "original_id": e.id,
            "original_created_at": e.created_at, "predecessor": predecessor}
    if e.key:
        meta["original_key"] = e.key
    ttl = max(0.001, (e.expires_at - now) / 1000) if e.expires_at > 0 else None
    s = strength_at(e.strength, e.strength_at, now, policy.decay_rate, e.reinforcements,
                    int(policy.decay_tick * 1000))
    return WriteRequest(
        e.value, tags=e.tags, metadata=meta, ttl=ttl, importance=e.importance,
        strength=min(1.0, max(0.0, s)), source=(*e.source, e.id),
        entry_id=deterministic_id(EDGE, source, target, e.id),
        embedding=e.embedding, embedder=e.embedder if e.embedding else None)


async def _level(mem: AgentMemory, successor: str, lvl: MemoryLevel, report: TransferReport,
                 page: int) -> None:
    src = mem.bb.scope(mem.scope_for(lvl))
    dst_id = agent_scope(successor, lvl)
    dst = mem.bb.scope(dst_id)
    policy = await src.policy()
    copied = present = skipped = 0
    ids = await src.ids()
    for i in range(0, len(ids), page):
        originals = [e for e in await src.get_many(ids[i:i + page]) if e is not None]
        live = [e for e in originals if e.superseded_by is None]
        skipped += len(originals) - len(live)
        members = [f"{src.id}|{e.id}" for e in live]
        done = await ledger.recorded(mem.bb, dst_id, members)
        have = await dst.get_many([deterministic_id(EDGE, src.id, dst_id, e.id) for e in live])
        now = mem.bb.now_ms()
        todo = [_copy(e, src.id, dst_id, mem.agent_id, now, policy)
                for e, d, h in zip(live, done, have, strict=True) if not d and h is None]
        present += len(live) - len(todo)
        if todo:
            if not copied:
                await mem._ensure(dst_id)
            await dst.write_many(todo)
            copied += len(todo)
        await ledger.record(mem.bb, dst_id, [m for m, d in zip(members, done, strict=True)
                                             if not d])
    report.copied[lvl.value] = copied
    report.present[lvl.value] = present
    report.skipped[lvl.value] = skipped


async def transfer(mem: AgentMemory, successor: str,
                   levels: Sequence[MemoryLevel | str] | None = None, *,
                   page: int = PAGE) -> TransferReport:
    """Copy ``mem``'s long-term ``levels`` into ``successor``'s scopes (module docstring).
    InvalidArgument for oneself or a bad level, NotFound for an ungranted successor where
    grants exist, AccessDenied across a foreign team or from a confined connection; in
    every refusal nothing is written."""
    lvls = transfer_levels(levels)
    await check_successor(mem, successor)
    report = TransferReport(mem.agent_id, successor, tuple(v.value for v in lvls))
    try:
        for lvl in lvls:
            await _level(mem, successor, lvl, report, page)
    except AccessDenied as exc:  # our checks passed: Redis refused (a confined connection)
        raise AccessDenied(
            f"transfer to {successor!r} refused by Redis ({exc}): a confined agent may "
            "neither write another agent's scopes nor read them; run `blackboard transfer` "
            "as the operator (service user)", by_server=exc.by_server) from exc
    return report
