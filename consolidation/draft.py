"""Drafts: the derived entries a transformer proposes, with their provenance."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from blackboard import deterministic_id

__all__ = ["Draft", "Provenance"]


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a draft comes from.

    ``sources`` are the ids of the batch entries it derives from, sorted and unique;
    ``model`` is the LLM model name when an LLM produced it, else None. ``versions`` are
    the sources read at a later version than their first (1), with that version: an
    updated source is new input, and its draft gets an id of its own.
    """

    sources: tuple[str, ...]
    transformer: str
    version: str
    edge: str
    model: str | None = None
    versions: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", tuple(sorted(set(self.sources))))
        object.__setattr__(self, "versions", tuple(sorted(
            (s, v) for s, v in dict(self.versions).items() if v > 1 and s in self.sources)))

    @classmethod
    def of(
        cls,
        sources: Iterable[str],
        transformer: str,
        version: str,
        edge: str,
        model: str | None = None,
    ) -> Provenance:
        return cls(tuple(sources), transformer, version, edge, model)

    def to_json(self) -> dict[str, Any]:
        """JSON-safe form, as stored under ``metadata["provenance"]``."""
        return {
            "sources": list(self.sources),
            "transformer": self.transformer,
            "version": self.version,
            "edge": self.edge,
            "model": self.model,
            **({"versions": dict(self.versions)} if self.versions else {}),
        }


@dataclass(frozen=True, slots=True)
class Draft:
    """A derived entry to be written to the target scope.

    ``value`` is JSON-safe; ``importance`` in [0, 1]. ``key`` is the canonical key when the
    transformer makes one (semantic facts, procedures). ``supersedes`` names the entry this
    one replaces (a changed belief, a newer procedure version): the writer must mark that
    entry superseded rather than rewrite it. ``reinforcements`` / ``reinforced_by`` carry
    merge counts (team aggregation). ``discriminator`` separates several drafts of one batch
    that share their sources and have no key.
    """

    value: Any
    provenance: Provenance
    tags: frozenset[str] = frozenset()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    importance: float = 0.5
    key: str | None = None
    supersedes: str | None = None
    reinforcements: int = 0
    reinforced_by: tuple[str, ...] = ()
    discriminator: str = ""

    def __post_init__(self) -> None:
        if not 0.0 <= self.importance <= 1.0:
            raise ValueError(f"importance must be in [0, 1], got {self.importance}")
        if not self.provenance.sources:
            raise ValueError("a draft needs at least one source entry")
        # Fail here, in the pure layer, rather than inside the write script.
        json.dumps(self.value, allow_nan=False)
        json.dumps(dict(self.metadata), allow_nan=False)
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    @property
    def sources(self) -> tuple[str, ...]:
        return self.provenance.sources

    def entry_id(self, edge: str, target_scope: str) -> str:
        """Deterministic id of this draft in ``target_scope``.

        ``deterministic_id(edge, target_scope, transformer, version, *sorted sources,
        "#" + (key or discriminator))``, with ``<source>@<version>`` after the sources for
        each updated one: a replay of the same batch gives the same ids, two drafts of one
        batch differ by their sources or their key/discriminator, and a draft from an
        updated source differs from the one drafted from it before.
        """
        p = self.provenance
        tail = "#" + (self.key if self.key is not None else self.discriminator)
        updated = [f"{s}@{v}" for s, v in p.versions]
        return deterministic_id(edge, target_scope, p.transformer, p.version, *p.sources,
                                *updated, tail)

    def full_metadata(self) -> dict[str, Any]:
        """``metadata`` plus ``provenance`` (and ``supersedes`` when set), ready to write."""
        out = dict(self.metadata)
        out["provenance"] = self.provenance.to_json()
        if self.supersedes is not None:
            out["supersedes"] = self.supersedes
        return out
