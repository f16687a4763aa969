"""The transformer protocol, its context, the registry, and the ``identity`` transformer."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from blackboard import Entry

from .draft import Draft, Provenance
from .errors import ConsolidationError
from .signals import chronological, occurred_at, origin_id

if TYPE_CHECKING:
    from .llm.protocol import LLMClient

__all__ = [
    "Similarity",
    "TransformContext",
    "Transformer",
    "UnknownTransformer",
    "compares_entries",
    "get_transformer",
    "identity",
    "reads_updates",
    "redrafts_updates",
    "register_transformer",
    "transformer_names",
    "transformer_roles",
]

Similarity = Callable[[list[str]], np.ndarray]
"""Embeds texts: ``n`` strings -> float array of shape ``(n, dim)`` (rows need not be unit)."""


@dataclass(frozen=True, slots=True)
class TransformContext:
    """What a transformer knows besides its batch.

    ``params`` are the edge's transformer parameters (JSON). ``existing`` maps canonical
    keys to the live entries of the target scope holding them (semantic beliefs, procedures)
    so a transformer can relate new evidence to them. ``now_ms`` is the reference time in
    ms since the epoch (recency, staleness); fixing it makes a run reproducible.
    """

    edge: str
    target_scope: str
    params: Mapping[str, Any] = field(default_factory=dict)
    llm: LLMClient | None = None
    similarity: Similarity | None = None
    existing: Mapping[str, Entry] = field(default_factory=dict)
    now_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    def provenance(
        self, t: Transformer, sources: Sequence[str], model: str | None = None
    ) -> Provenance:
        return Provenance.of(sources, t.name, t.version, self.edge, model)


@runtime_checkable
class Transformer(Protocol):
    """``batch -> drafts``. ``version`` is part of every draft id: bump it when the output
    for the same batch changes, so a new version does not collide with old outputs."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    async def __call__(self, batch: Sequence[Entry], ctx: TransformContext) -> list[Draft]: ...


class UnknownTransformer(ConsolidationError, LookupError):
    """No transformer is registered under the requested name."""


_REGISTRY: dict[str, Transformer] = {}
#: The worker role that runs each registered transformer's edges (see workers.roles).
_ROLES: dict[str, str] = {}
T = TypeVar("T", bound=Transformer)


def register_transformer(t: T, *, role: str | None = None, replace: bool = False) -> T:
    """Register ``t`` under ``t.name`` and return it (usable as a class-instance decorator).

    ``role`` is the worker role whose workers run the edges of ``t`` (a worker process per
    role, so a slow transformer does not hold another's events back); by default a role of
    its own, named as the transformer. This registry is the one list of transformer names
    and roles: workers and memory's edge validation read it (memory through its catalog).
    Registering a different object under a taken name raises ValueError unless ``replace``.
    """
    cur = _REGISTRY.get(t.name)
    if cur is not None and cur is not t and not replace:
        raise ValueError(f"transformer {t.name!r} is already registered")
    _REGISTRY[t.name] = t
    _ROLES[t.name] = t.name if role is None else role
    return t


def get_transformer(name: str) -> Transformer:
    """The transformer registered as ``name``; UnknownTransformer lists the known names."""
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(transformer_names()) or "none"
        raise UnknownTransformer(f"unknown transformer {name!r}; known: {known}") from None


def reads_updates(name: str) -> bool:
    """Whether the edges of transformer ``name`` take an entry again when it is updated:
    its ``reads_updates`` attribute, True by default (and for an unknown name). A
    transformer over steps (episodic, procedural) says False: an updated step, such as
    the survivor of a dedupe merge, is the same step, not a new one."""
    t = _REGISTRY.get(name)
    return bool(getattr(t, "reads_updates", True)) if t is not None else True


def redrafts_updates(name: str) -> bool:
    """Whether transformer ``name`` applies an updated source to the entry it already
    drafted from that source (its ``redrafts_updates`` attribute, False by default): only
    one whose drafts keep each source's latest statement (the team's statements by slot)
    may, since applying the same source twice must add nothing. Any other transformer
    takes a held entry that cites a batch entry for a crash replay of that batch, whatever
    the source's version: a belief's support or a tally would otherwise count an updated
    source (say, the survivor of a dedupe merge) a second time."""
    t = _REGISTRY.get(name)
    return bool(getattr(t, "redrafts_updates", False)) if t is not None else False


def compares_entries(name: str) -> bool:
    """Whether transformer ``name`` compares its batch's entries by meaning (its
    ``compares_entries`` attribute, False by default): a worker then gives it
    ``ctx.similarity`` over the entries' vectors from its embedder, when one is installed.
    Others get none unless an edge asks: a model run per sentence would cap summarising at
    the model's pace (about 110 texts/s on two cores)."""
    t = _REGISTRY.get(name)
    return bool(getattr(t, "compares_entries", False)) if t is not None else False


def transformer_names() -> list[str]:
    """Registered names, sorted."""
    return sorted(_REGISTRY)


def transformer_roles() -> dict[str, frozenset[str]]:
    """Each worker role that runs transformers -> the names of the transformers it runs,
    roles in the order their first transformer was registered."""
    out: dict[str, set[str]] = {}
    for name, role in _ROLES.items():
        out.setdefault(role, set()).add(name)
    return {r: frozenset(ns) for r, ns in out.items()}


class _Identity:
    """Copies each entry unchanged (value, tags, metadata, key, importance): sensory ->
    working. One draft per entry, sourced from it alone."""

    name = "identity"
    version = "1"

    async def __call__(self, batch: Sequence[Entry], ctx: TransformContext) -> list[Draft]:
        seen: set[str] = set()
        out = []
        for e in chronological(batch):
            if e.id in seen:  # at-least-once delivery may repeat an entry within a batch
                continue
            seen.add(e.id)
            out.append(
                Draft(
                    value=e.value,
                    provenance=ctx.provenance(self, [e.id]),
                    tags=e.tags,
                    # The copy keeps its origin's time and id, so transformers reading the
                    # target order copies as the originals happened, not as they were copied.
                    metadata={
                        **e.metadata,
                        "occurred_at": occurred_at(e),
                        "origin_id": origin_id(e),
                    },
                    importance=e.importance,
                    key=e.key,
                )
            )
        return out


#: Registered by :mod:`consolidation.summarize`, in the summarize role: copying is cheap
#: and feeds the same stm the summaries go to, so it needs no worker process of its own.
identity: Transformer = _Identity()
