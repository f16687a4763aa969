"""Bridge from dataflow edges to consolidation transformers: drafts -> write requests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from blackboard import Blackboard, Entry, NotFound, Scope, WriteRequest
from blackboard.request import Retire
from consolidation.draft import Draft
from consolidation.llm.protocol import LLMClient
from consolidation.semantic import draft_entry, superseded_metadata, superseded_value
from consolidation.transformer import (
    Similarity,
    TransformContext,
    compares_entries,
    get_transformer,
    redrafts_updates,
)
from memory.subscriptions import MemorySubscription
from retrieval.belief_keys import BeliefKey
from retrieval.embedders import Embedder

from .similarity import TextVectors

__all__ = ["TransformBridge", "draft_request"]

#: Edge params the dataflow runner reads itself; the transformer never sees them.
RUNNER_PARAMS = frozenset({"max_batch"})


def draft_request(
    d: Draft, edge_id: str, target: str, old: Entry | None = None, now_ms: int = 0
) -> WriteRequest:
    """The write of a draft: deterministic id, provenance in metadata, sources recorded.

    A draft with a canonical key takes that key by supersession: a changed belief or a
    newer procedure version is a new entry, and the old one is kept, marked superseded.
    With ``old`` (the entry the draft supersedes, as read), the write retires it
    compare-and-set: its stored status becomes ``superseded`` with ``superseded_by`` (and
    ``valid_to_ms`` when the claim changed), or the write fails if it changed meanwhile.
    """
    entry_id = d.entry_id(edge_id, target)
    retire = None
    if old is not None and d.key is not None and d.supersedes == old.id:
        changed = d.metadata.get("revision") == "changed"
        until = d.metadata.get("valid_from_ms") if changed else None
        valid_to = until if isinstance(until, int) else None
        retire = Retire(old.id, old.version, superseded_metadata(old, entry_id, now_ms, valid_to),
                        superseded_value(old, entry_id, valid_to),
                        old.key if old.key != d.key else None)
    return WriteRequest(
        value=d.value,
        tags=d.tags,
        metadata=d.full_metadata(),
        importance=d.importance,
        source=d.sources,
        entry_id=entry_id,
        key=d.key,
        key_mode="supersede",
        retire=retire,
    )


@dataclass
class TransformBridge:
    """Runs an edge's transformer over a batch, with the target's current beliefs as context.

    Transformers that make canonical keys (semantic facts, procedures) relate new evidence
    to the live entry holding each key, so the bridge runs them twice when needed: once to
    learn the keys, once with those entries as ``existing``. Both runs are pure.
    """

    bb: Blackboard
    llm: LLMClient | None = None
    similarity: Similarity | None = None
    #: Gives a transformer that compares entries (``compares_entries``) their vectors,
    #: unless ``similarity`` is set.
    embedder: Embedder | None = None

    async def __call__(
        self, edge: MemorySubscription, target: str, entries: list[Entry], now_ms: int
    ) -> list[WriteRequest]:
        t = get_transformer(edge.transformer)
        params = {k: v for k, v in edge.params.items() if k not in RUNNER_PARAMS}
        similarity = self.similarity
        if similarity is None and self.embedder is not None and compares_entries(t.name):
            similarity = TextVectors.stored(entries, self.embedder)
        ctx = TransformContext(
            edge=edge.id,
            target_scope=target,
            params=params,
            llm=self.llm,
            similarity=similarity,
            now_ms=now_ms,
        )
        # Versions matter to a transformer that redrafts updated sources; to any other, a
        # batch entry is one input whatever its version (consolidation.transformer).
        versions = ({e.id: e.version for e in entries} if redrafts_updates(t.name)
                    else {e.id: 1 for e in entries})
        drafts = await t(entries, ctx)
        keys = {d.key for d in drafts if d.key}
        existing: dict[str, Entry] = {}
        if keys:
            existing = await self._existing(target, keys, versions)
            if existing:
                drafts = await t(entries, replace(ctx, existing=existing))
        drafts = [_read_at(d, versions) for d in drafts]
        # A key may get several versions in one batch (a change the batch itself made):
        # each retires the one before it, as it will be stored.
        holders, out = dict(existing), []
        for d in drafts:
            out.append(draft_request(d, edge.id, target, holders.get(d.key or ""), now_ms))
            if d.key is not None:
                holders[d.key] = draft_entry(d, replace(ctx, existing={}))
        return out

    async def _existing(
        self, target: str, keys: Iterable[str], batch: Mapping[str, int]
    ) -> dict[str, Entry]:
        """The live holder of each key, as it stood before this batch (``batch``: each
        entry's id and the version read).

        A holder derived from this very batch was written by an earlier run of it that
        crashed before its buffer was trimmed: the replay must see what that run saw (the
        entry the holder superseded, or nothing), so it makes the same drafts, whose
        deterministic ids make the rewrite a no-op. Without this, an accumulating
        transformer (an open episode, a procedure's tally) would count the batch twice.
        A holder that cites a batch entry at an older version than the one read now was
        drafted before that entry was updated: the update is new input, applied to it.
        """
        scope = self.bb.scope(target)
        out: dict[str, Entry] = {}
        for k in sorted(keys):
            try:
                e = await self._holder(scope, k)
                if replays(e, batch):
                    prev = e.metadata.get("supersedes")
                    if not isinstance(prev, str):
                        continue
                    e = await scope.get(prev)
            except NotFound:
                continue
            out[k] = e
        return out

    @staticmethod
    async def _holder(scope: Scope, key: str) -> Entry:
        """The live entry holding ``key``, else one holding a key it had before (a belief
        stored before kinds joined its key: the new version supersedes it)."""
        parts = BeliefKey.parse(key)
        for name in [key, *(parts.former() if parts is not None else [])]:
            try:
                e = await scope.get_by_key(name)
            except NotFound:
                continue
            if name == key or e.superseded_by is None:
                return e
        raise NotFound(f"no entry holds key {key!r}")


def replays(held: Entry, batch: Mapping[str, int]) -> bool:
    """Whether ``held`` was drafted from ``batch`` (entry ids and the versions read) as it
    reads now, i.e. an earlier run of this batch wrote it: it cites a batch entry, and
    none at an older version than the batch's (``provenance.versions``: a source cited
    without one was read at version 1)."""
    shared = [s for s in held.source if s in batch]
    if not shared:
        return False
    prov = held.metadata.get("provenance")
    got = prov.get("versions") if isinstance(prov, dict) else None
    drafted = got if isinstance(got, dict) else {}
    return all(batch[s] <= _int(drafted.get(s), 1) for s in shared)


def _int(v: object, default: int) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _read_at(d: Draft, versions: Mapping[str, int]) -> Draft:
    """``d`` with the version each of its updated sources was read at (its provenance):
    a replay of this batch recognises its output by them, and a draft from an updated
    source gets an id of its own (:meth:`Draft.entry_id`). Drafts without a key are left
    as they were: they supersede nothing, and their ids stay those of their sources."""
    if d.key is None:
        return d
    read = tuple((s, versions[s]) for s in d.sources if versions.get(s, 1) > 1)
    return replace(d, provenance=replace(d.provenance, versions=read)) if read else d
