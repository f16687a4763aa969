"""On-disk snapshot of a follower's index: entries, their vectors, and a manifest holding
each scope's last applied feed id.

BM25 is not stored: rebuilding it from the entries costs about as much as reading its
arrays back, and leaves one format to version. The vectors are what is expensive (one
model call per entry), so they are stored, as one float32 matrix.

Layout of a snapshot directory: ``entries-<gen>.jsonl`` (one entry per line, without its
embedding), ``vectors-<gen>.npy`` (row i is line i's vector, zeros where ``has_vec`` is
false) and ``manifest.json`` written last by an atomic rename, naming the generation. A
crash while saving leaves the previous snapshot intact.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from blackboard import Entry

__all__ = ["SNAPSHOT_FORMAT", "Snapshot", "SnapshotManifest", "load_snapshot", "save_snapshot"]

SNAPSHOT_FORMAT = 1
_MANIFEST = "manifest.json"
# Vectors go in their own file; a write's trace context is of no use to a restored index.
_SKIP = frozenset({"embedding", "embedder", "traceparent"})


@dataclass(frozen=True, slots=True)
class SnapshotManifest:
    """``scopes``: scope -> last applied feed id; ``embedder``: the vectors' space (None:
    no vectors); ``entries``: per scope, how many lines (in file order)."""

    generation: str
    created_ms: int
    embedder: str | None
    dim: int
    scopes: dict[str, str]
    entries: dict[str, int]
    format: int = SNAPSHOT_FORMAT


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A loaded snapshot: per scope its entries, carrying their vectors as ``embedding``
    bytes named by the manifest's embedder."""

    manifest: SnapshotManifest
    entries: dict[str, list[Entry]] = field(default_factory=dict)


def _entry_json(e: Entry) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(Entry):
        if f.name in _SKIP:
            continue
        v = getattr(e, f.name)
        if isinstance(v, frozenset):
            v = sorted(v)
        elif isinstance(v, tuple):
            v = list(v)
        elif isinstance(v, Mapping):
            v = dict(v)
        out[f.name] = v
    return out


def _entry_from(d: dict[str, Any], vec: bytes | None, embedder: str | None) -> Entry:
    d = dict(d)
    d["tags"] = frozenset(d.get("tags", ()))
    d["reinforced_by"] = tuple(d.get("reinforced_by", ()))
    d["source"] = tuple(d.get("source", ()))
    return Entry(**d, embedding=vec, embedder=embedder if vec is not None else None)


def save_snapshot(
    path: str | Path,
    applied: Mapping[str, str],
    scopes: Mapping[str, tuple[list[Entry], npt.NDArray[np.float32] | None, npt.NDArray[np.bool_]]],
    embedder: str | None,
    dim: int,
) -> SnapshotManifest:
    """Write a snapshot of ``scopes`` (scope -> entries, vectors, has_vec, as
    :meth:`SearchEngine.export_scope` gives them) at feed positions ``applied``."""
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    gen = f"{int(time.time() * 1000)}-{uuid.uuid4().hex[:8]}"
    counts: dict[str, int] = {}
    mats: list[npt.NDArray[np.float32]] = []
    with open(root / f"entries-{gen}.jsonl", "w", encoding="utf-8") as fh:
        for scope, (entries, vecs, has) in scopes.items():
            counts[scope] = len(entries)
            for i, e in enumerate(entries):
                rec = _entry_json(e)
                rec["_vec"] = bool(vecs is not None and has[i])
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            if embedder is not None:
                mats.append(
                    vecs if vecs is not None else np.zeros((len(entries), dim), np.float32)
                )
        fh.flush()
        os.fsync(fh.fileno())
    if embedder is not None:
        mat = np.concatenate(mats) if mats else np.zeros((0, dim), np.float32)
        np.save(root / f"vectors-{gen}.npy", mat.astype(np.float32))
    man = SnapshotManifest(gen, int(time.time() * 1000), embedder, dim,
                           {s: applied[s] for s in scopes}, counts)
    tmp = root / f"{_MANIFEST}.{gen}.tmp"
    tmp.write_text(json.dumps({f.name: getattr(man, f.name) for f in fields(man)}))
    os.replace(tmp, root / _MANIFEST)
    for old in root.iterdir():  # earlier generations are unreachable now
        if old.name.startswith(("entries-", "vectors-")) and gen not in old.name:
            old.unlink(missing_ok=True)
    return man


def load_snapshot(path: str | Path) -> Snapshot | None:
    """The snapshot in ``path``; None when there is none or it is unreadable (the caller
    bootstraps from Redis instead: a snapshot is only a cache)."""
    root = Path(path)
    try:
        raw = json.loads((root / _MANIFEST).read_text())
        if raw.get("format") != SNAPSHOT_FORMAT:
            return None
        man = SnapshotManifest(**raw)
        vecs = (
            np.load(root / f"vectors-{man.generation}.npy")
            if man.embedder is not None
            else None
        )
        out: dict[str, list[Entry]] = {}
        order = [s for s, n in man.entries.items() for _ in range(n)]
        with open(root / f"entries-{man.generation}.jsonl", encoding="utf-8") as fh:
            for i, (scope, line) in enumerate(zip(order, fh, strict=True)):
                d = json.loads(line)
                has = d.pop("_vec", False)
                vec = vecs[i].tobytes() if vecs is not None and has else None
                out.setdefault(scope, []).append(_entry_from(d, vec, man.embedder))
        return Snapshot(man, out)
    except (OSError, ValueError, TypeError, KeyError):
        return None
