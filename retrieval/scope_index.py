"""One scope's indexes and filter columns: rows (int64, dense, never reused) <-> entries."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from blackboard import Entry

from .bm25 import BM25Index
from .dense import DenseIndex
from .growable import GrowableArray
from .query import MemoryQuery
from .scoring import current_strength
from .text import event_time_ms, is_said, origin_of
from .updates import raw_slot

__all__ = ["ScopeDecay", "ScopeIndex"]

I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class ScopeDecay:
    """The decay parameters of a scope: ``rate`` per tick, ``tick_ms`` the tick in ms."""

    rate: float = 0.0
    tick_ms: int = 3_600_000


class ScopeIndex:
    """A scope's entries as rows, its :class:`DenseIndex` and :class:`BM25Index` keyed by
    row, and the columns the hard filters read (tags, created_at, key, strength, expiry).

    Not thread-safe on its own: the engine serialises mutations.
    """

    def __init__(self, scope: str, dense: DenseIndex | None, bm25: BM25Index,
                 static: DenseIndex | None = None,
                 static_floor: DenseIndex | None = None) -> None:
        self.scope = scope
        self.dense = dense
        self.bm25 = bm25
        #: First-pass vectors (:mod:`retrieval.embedders.static`) of the rows still
        #: waiting for their full one (``has_static``), dropped when it arrives; and,
        #: when the first pass has them, the vectors its relevance floor is taken on.
        self.static = static
        self.static_floor = static_floor
        self.decay = ScopeDecay()
        self.entries: list[Entry | None] = []
        self.row_of: dict[str, int] = {}
        self.alive = GrowableArray(np.bool_, False)
        self.has_vec = GrowableArray(np.bool_, False)
        self.has_static = GrowableArray(np.bool_, False)
        self.created_at = GrowableArray(np.int64)
        self.expires_at = GrowableArray(np.int64)
        self.strength = GrowableArray(np.float64)
        self.strength_at = GrowableArray(np.int64)
        self.reinforcements = GrowableArray(np.int64)
        self.importance = GrowableArray(np.float64)
        self.tag_rows: dict[str, set[int]] = {}
        self.keys: dict[int, str] = {}
        self.n_expiring = 0
        #: The newest event time (ms) ever indexed here: the anchor of relative time in
        #: queries (:mod:`retrieval.timeline`); 0 while empty.
        self.latest_event = 0
        #: Live entries a conversation stage can use (a message, or a speaker in metadata):
        #: with none, the speaker and neighbour stages are skipped.
        self.n_said = 0
        self.n_copies = 0  # entries copied from another (metadata origin_id)
        #: slot -> rows of the raw statements on it (:func:`retrieval.updates.slot_of`)
        self.slot_rows: dict[str, set[int]] = {}

    def __len__(self) -> int:
        return len(self.row_of)

    # -- mutation ------------------------------------------------------------

    def append(self, entry: Entry) -> int:
        """A new row for ``entry`` (the caller removed any older row of the same id)."""
        row = len(self.entries)
        self.entries.append(entry)
        self.row_of[entry.id] = row
        self.alive.extend([True])
        self.has_vec.extend([False])
        self.has_static.extend([False])
        self.created_at.extend([entry.created_at])
        self.expires_at.extend([entry.expires_at])
        self.strength.extend([entry.strength])
        self.strength_at.extend([entry.strength_at or entry.created_at])
        self.reinforcements.extend([entry.reinforcements])
        self.importance.extend([entry.importance])
        for t in entry.tags:
            self.tag_rows.setdefault(t, set()).add(row)
        if entry.key is not None:
            self.keys[row] = entry.key
        self.n_expiring += entry.expires_at > 0
        self.n_said += is_said(entry)
        self.n_copies += origin_of(entry) != entry.id
        self.latest_event = max(self.latest_event, event_time_ms(entry))
        slot = raw_slot(entry)
        if slot is not None:
            self.slot_rows.setdefault(slot, set()).add(row)
        return row

    def drop_first_pass(self, rows: npt.NDArray[np.int64]) -> None:
        """Drop the first-pass vectors of ``rows``: their full ones arrived, or they are
        gone."""
        for index in (self.static, self.static_floor):
            if index is not None:
                index.remove(rows)
        self.has_static.a[rows] = False

    def drop(self, entry_id: str) -> int | None:
        """Retire the row of ``entry_id`` from the columns (indexes: the caller); its row."""
        row = self.row_of.pop(entry_id, None)
        if row is None:
            return None
        entry = self.entries[row]
        assert entry is not None
        self.entries[row] = None
        self.alive.a[row] = False
        self.has_vec.a[row] = False
        self.has_static.a[row] = False
        for t in entry.tags:
            rows = self.tag_rows.get(t)
            if rows is not None:
                rows.discard(row)
                if not rows:
                    del self.tag_rows[t]
        self.keys.pop(row, None)
        slot = raw_slot(entry)
        if slot is not None and (rows := self.slot_rows.get(slot)) is not None:
            rows.discard(row)
            if not rows:
                del self.slot_rows[slot]
        self.n_expiring -= entry.expires_at > 0
        self.n_said -= is_said(entry)
        self.n_copies -= origin_of(entry) != entry.id
        return row

    # -- filters -------------------------------------------------------------

    def _only_absent_exclusions(self, q: MemoryQuery) -> bool:
        """Whether ``q``'s only hard filter excludes tags no row of this scope carries."""
        tf = q.tag_filter
        return (not (tf.all_of or tf.any_of) and q.time_range is None
                and q.key_pattern is None and q.min_strength is None
                and not any(self.tag_rows.get(t) for t in tf.none_of))

    def _tag_mask(self, tag: str) -> Mask:
        m = np.zeros(self.alive.n, np.bool_)
        rows = self.tag_rows.get(tag)
        if rows:
            m[np.fromiter(rows, np.int64, len(rows))] = True
        return m

    def current_strength(self, rows: I64 | slice, now_ms: int) -> npt.NDArray[np.float64]:
        """Decayed strength of ``rows`` at ``now_ms``."""
        return current_strength(
            self.strength.view[rows],
            self.strength_at.view[rows],
            self.reinforcements.view[rows],
            now_ms,
            self.decay.rate,
            self.decay.tick_ms,
        )

    def allowed_rows(self, q: MemoryQuery, now_ms: int) -> I64 | None:
        """Rows passing every hard filter of ``q`` and not expired at ``now_ms``; ``None``
        when nothing restricts the live rows (the indexes then search everything)."""
        if not q.has_logical and self.n_expiring == 0:
            return None
        if self.n_expiring == 0 and self._only_absent_exclusions(q):
            return None  # e.g. recall's default none_of {"superseded"} on a raw scope
        mask = self.alive.view.copy()
        tf = q.tag_filter
        for t in tf.all_of:
            mask &= self._tag_mask(t)
        if tf.any_of:
            anym = np.zeros_like(mask)
            for t in tf.any_of:
                anym |= self._tag_mask(t)
            mask &= anym
        for t in tf.none_of:
            mask &= ~self._tag_mask(t)
        if q.time_range is not None:
            ca = self.created_at.view
            mask &= (ca >= q.time_range[0]) & (ca <= q.time_range[1])
        if q.key_pattern is not None:
            rx = re.compile(fnmatch.translate(q.key_pattern))
            km = np.zeros_like(mask)
            for row, key in self.keys.items():
                if mask[row] and rx.match(key):
                    km[row] = True
            mask &= km
        if q.min_strength is not None:
            mask &= self.current_strength(slice(None), now_ms) >= q.min_strength
        if self.n_expiring:
            ex = self.expires_at.view
            mask &= ~((ex > 0) & (ex <= now_ms))
        return np.flatnonzero(mask).astype(np.int64)
