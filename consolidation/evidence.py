"""Evidence that never dangles: each link of a belief carries a frozen copy of what it cites.

A belief (semantic, team) cites raw entries as evidence. Those entries live in scopes that
maintenance thins (dedupe deletes merged duplicates, decay and capacity evict, TTL expires)
while the belief lives on for months. The choice here: *the raw evidence is kept
immutable with the belief*. When a belief is drafted, each link gets a snapshot of the
entry it cites: its scope, its author (who wrote it, established by the write script), its
time and its text (at most :data:`TEXT_CHARS` characters). The entry itself is then free to
go: a link resolves to the live entry while it exists, else to its snapshot.

Why a snapshot rather than pinning the cited entries (retire them from readers, keep their
hashes while a belief cites them):

* the snapshot is written by the belief's own write script, in the belief's slot, so a
  belief and its evidence appear atomically; a pin would be a reference count kept in the
  *evidence's* partition (another hash slot on a Cluster), updated before the belief is
  written and released when it goes, so a crash between the two leaks a pin or, worse,
  leaves a window where a cited entry is unprotected;
* maintenance stays O(evicted): delete, expire and prune need no citation lookups, and an
  explicit ``forget`` of a raw entry still deletes it (the belief keeps what it learnt,
  as a quotation, not the entry with its embedding and index memberships);
* the cost is bounded and released with the belief: a link is at most ~``TEXT_CHARS`` +
  ~200 bytes (ids, scope, author, time), a belief holds one link per cited entry of its
  batch (an edge batch is bounded by ``max_batch``); pinned entries would keep their whole
  hash (a 384-float embedding alone is 1.5 KB) plus index members for the belief's life.

Legacy beliefs (drafted before snapshots) may hold bare links: :func:`check_evidence`
reports every link that resolves neither to a live entry nor to a snapshot, and its
repair freezes what is safe into ``metadata["evidence_kept"]`` (never touching the
belief's value, its claim): a snapshot of a cited entry still alive, or of the survivor a
dedupe merged it into (``merged_from``), marked ``via`` that survivor.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from blackboard import Blackboard, BlackboardError, Entry, NotFound, VersionConflict
from blackboard.entry import value_text

from .signals import actors_of

__all__ = [
    "TEXT_CHARS",
    "EvidenceReport",
    "LinkState",
    "check_evidence",
    "evidence_links",
    "is_belief",
    "link_state",
    "snapshot",
    "snapshot_of",
    "with_snapshots",
]

#: Characters of the cited entry's text a snapshot keeps (the rest is cut with "…").
TEXT_CHARS = 280
#: Metadata key of the snapshots a repair froze for a belief's legacy links.
KEPT = "evidence_kept"


def snapshot(e: Entry) -> dict[str, Any]:
    """The frozen copy of ``e`` a link keeps: scope, author, time, text (clipped)."""
    text = " ".join(value_text(e.value).split())
    if len(text) > TEXT_CHARS:
        text = text[: TEXT_CHARS - 1] + "…"
    who = actors_of(e)  # the write script's author (the scope owner), never a claimed name
    return {"scope": e.scope, "author": who[0] if who else None, "written_at": e.created_at,
            "text": text}


def with_snapshots(links: Iterable[Mapping[str, Any]],
                   by_id: Mapping[str, Entry]) -> list[dict[str, Any]]:
    """``links`` each with the snapshot of the entry it cites (those in ``by_id``);
    a link's own fields win over the snapshot's."""
    out = []
    for ln in links:
        e = by_id.get(str(ln.get("entry")))
        out.append({**snapshot(e), **ln} if e is not None else dict(ln))
    return out


def is_belief(e: Entry) -> bool:
    """A belief: a structured value with a canonical key and a list of evidence links."""
    v = e.value
    return (isinstance(v, dict) and isinstance(v.get("evidence"), list)
            and isinstance(v.get("canonical_key") or e.metadata.get("canonical_key"), str))


def evidence_links(e: Entry) -> list[dict[str, Any]]:
    """The belief's links that name an entry (others are not links)."""
    v = e.value if isinstance(e.value, dict) else {}
    return [ln for ln in v.get("evidence", []) if isinstance(ln, dict)
            and isinstance(ln.get("entry"), str) and ln["entry"]]


def snapshot_of(belief: Entry, link: Mapping[str, Any]) -> dict[str, Any] | None:
    """The frozen copy a link resolves to when its entry is gone: the link's own, else
    the one a repair kept in the belief's metadata; None when there is none."""
    if isinstance(link.get("text"), str) and isinstance(link.get("scope"), str):
        return {k: link[k] for k in ("scope", "author", "written_at", "text") if k in link}
    kept = belief.metadata.get(KEPT)
    got = kept.get(str(link.get("entry"))) if isinstance(kept, dict) else None
    return dict(got) if isinstance(got, dict) else None


class LinkState(StrEnum):
    LIVE = "live"  # the cited entry is readable
    KEPT = "kept"  # gone (deduped, evicted, expired, forgotten); its snapshot answers
    BROKEN = "broken"  # gone, and nothing kept: the belief cannot show this evidence


def link_state(belief: Entry, link: Mapping[str, Any], live: bool) -> LinkState:
    if live:
        return LinkState.LIVE
    return LinkState.KEPT if snapshot_of(belief, link) is not None else LinkState.BROKEN


@dataclass(slots=True)
class EvidenceReport:
    """What :func:`check_evidence` found: counts per state, each broken link as
    ``(belief scope, belief id, cited entry id)``, and the links a repair froze."""

    beliefs: int = 0
    links: dict[str, int] = field(default_factory=lambda: {s.value: 0 for s in LinkState})
    broken: list[tuple[str, str, str]] = field(default_factory=list)
    repaired: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"beliefs": self.beliefs, "links": dict(self.links),
                "broken": [{"scope": s, "belief": b, "entry": i} for s, b, i in self.broken],
                "repaired": self.repaired}


def _candidates(belief_scope: str, link: Mapping[str, Any], scopes: Sequence[str]) -> list[str]:
    """Where a link's entry may be: the scope it names, else the scopes of the belief
    scope's owner (``agent:<a>:`` or ``team:<t>``), where a legacy belief's evidence came
    from."""
    named = link.get("scope")
    if isinstance(named, str):
        return [named]
    parts = belief_scope.split(":")
    owner = ":".join(parts[:2]) if parts[0] in ("agent", "team") else belief_scope
    return [s for s in scopes if s == owner or s.startswith(owner + ":")]


async def _live(bb: Blackboard, entry_id: str, candidates: Sequence[str]) -> Entry | None:
    for s in candidates:
        try:
            got = (await bb.scope(s).get_many([entry_id]))[0]
        except BlackboardError:  # an id or scope outside the grammar: not a live entry
            return None
        if got is not None:
            return got
    return None


async def _survivor(bb: Blackboard, entry_id: str, candidates: Sequence[str],
                    cache: dict[str, dict[str, Entry]]) -> Entry | None:
    """The live entry a dedupe merged ``entry_id`` into (its ``merged_from`` names it)."""
    for s in candidates:
        if s not in cache:
            cache[s] = {m: e for e in await bb.scope(s).entries(limit=None)
                        for m in e.metadata.get("merged_from", []) if isinstance(m, str)}
        if entry_id in cache[s]:
            return cache[s][entry_id]
    return None


async def _repair(bb: Blackboard, belief: Entry, frozen: dict[str, dict[str, Any]]) -> bool:
    """Add ``frozen`` snapshots to the belief's ``evidence_kept`` (metadata only: the
    claim and its links are never rewritten), if the belief did not change meanwhile."""
    kept = dict(belief.metadata.get(KEPT) or {})
    kept.update(frozen)
    meta = {**belief.metadata, KEPT: kept}
    try:
        await bb.scope(belief.scope).update(belief.id, metadata=meta,
                                            expected_version=belief.version)
    except (VersionConflict, NotFound):
        return False  # changed or gone meanwhile: the next check sees it as it is now
    return True


@dataclass(slots=True)
class _Checker:
    bb: Blackboard
    every: list[str]
    repair: bool
    rep: EvidenceReport = field(default_factory=EvidenceReport)
    survivors: dict[str, dict[str, Entry]] = field(default_factory=dict)

    async def belief(self, s: str, b: Entry) -> None:
        """Resolve (and with ``repair`` freeze) each link of belief ``b`` in scope ``s``."""
        self.rep.beliefs += 1
        states: dict[str, LinkState] = {}
        frozen: dict[str, dict[str, Any]] = {}
        for ln in evidence_links(b):
            cands = _candidates(s, ln, self.every)
            live = await _live(self.bb, ln["entry"], cands)
            states[ln["entry"]] = link_state(b, ln, live is not None)
            if self.repair and snapshot_of(b, ln) is None:
                src = live or await _survivor(self.bb, ln["entry"], cands, self.survivors)
                if src is not None:
                    frozen[ln["entry"]] = snapshot(src) | ({} if src is live
                                                          else {"via": src.id})
        if frozen and await _repair(self.bb, b, frozen):
            self.rep.repaired += len(frozen)
            states.update({i: LinkState.LIVE if states[i] is LinkState.LIVE
                           else LinkState.KEPT for i in frozen})
        for i, state in states.items():
            self.rep.links[state.value] += 1
            if state is LinkState.BROKEN:
                self.rep.broken.append((s, b.id, i))


async def check_evidence(bb: Blackboard, scopes: Iterable[str] | None = None, *,
                         repair: bool = False) -> EvidenceReport:
    """Every evidence link of every belief in ``scopes`` (default: every registered
    scope), resolved: live entry, kept snapshot, or broken. With ``repair``, a legacy
    link whose entry is still alive, or was merged by dedupe into a live survivor, gets a
    snapshot (see the module doc); a link with no trace left stays broken (reported), as
    does one whose belief changed while the check ran. Cost: a read per entry of the
    scopes and a read per link: an operator's tool, like the index check."""
    every: list[str] = []
    for p in range(bb.partitions):
        every += await bb.upkeep(p).scope_ids()
    every = sorted(set(every))
    c = _Checker(bb, every, repair)
    for s in sorted(set(scopes)) if scopes is not None else every:
        for b in await bb.scope(s).entries(limit=None):
            if is_belief(b):
                await c.belief(s, b)
    return c.rep
