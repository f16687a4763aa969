"""The canonical key of a belief, and the slot it states.

A belief's key names its kind, the type of its subject and what it is about:
``fact:<kind>:<subject_type>:<subject>:<predicate>`` for a slot that holds one value at a
time (a functional predicate), with ``:<object>`` after it otherwise (a count's noun:
``has:dog``). Kinds (:data:`KINDS`, each with its revalidation cadence,
:data:`CADENCE_DAYS`) and subject types (:data:`SUBJECT_TYPES`) are
assigned by code (:mod:`consolidation.kinds`), from the slot alone, so every statement on
one slot keys alike.

The *slot* is the key without kind and subject type, ``fact:<subject>:<predicate>[:...]``:
what a raw statement states (:mod:`retrieval.updates`), and the key beliefs had before
kinds joined it; a stored belief under such a key is read as that slot, and the semantic
transformers supersede it under the new key (:meth:`BeliefKey.former`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CADENCE_DAYS", "DEFAULT_KIND", "KINDS", "SUBJECT_TYPES", "BeliefKey",
           "slot_of_key"]

#: Revalidation cadence (days) of each belief kind; freshness halves every cadence
#: (:func:`retrieval.truth.freshness`).
CADENCE_DAYS: dict[str, float] = {
    "operator_preference": 30.0,
    "project_state": 7.0,
    "world_fact": 90.0,
    "self_model": 14.0,
    "relationship_fact": 60.0,
    "tooling_state": 3.0,
}
DEFAULT_KIND = "world_fact"
KINDS: tuple[str, ...] = tuple(CADENCE_DAYS)
SUBJECT_TYPES: tuple[str, ...] = ("entity", "project", "tool", "agent", "global")

_PREFIX = "fact"


@dataclass(frozen=True, slots=True)
class BeliefKey:
    """A belief's key: ``kind``/``subject_type`` (None in a key written before they joined
    it), ``subject`` (a slug), ``predicate`` and ``rest`` (the object, or a count's noun;
    None for a functional slot)."""

    kind: str | None
    subject_type: str | None
    subject: str
    predicate: str
    rest: str | None = None

    def __str__(self) -> str:
        if self.kind is None or self.subject_type is None:
            return self.slot  # as it was written
        return f"{_PREFIX}:{self.kind}:{self.subject_type}:{self.slot[len(_PREFIX) + 1:]}"

    @property
    def slot(self) -> str:
        """``fact:<subject>:<predicate>[:<rest>]``: what the belief states, whatever its
        kind."""
        tail = f":{self.rest}" if self.rest is not None else ""
        return f"{_PREFIX}:{self.subject}:{self.predicate}{tail}"

    @property
    def single_valued(self) -> bool:
        """Whether the key names no object (a functional predicate: another object
        contradicts)."""
        return self.rest is None

    def former(self) -> list[str]:
        """The keys this belief may have been stored under before: the slot itself."""
        return [self.slot] if self.kind is not None else []

    @classmethod
    def parse(cls, key: str) -> BeliefKey | None:
        """The parts of ``key`` (either form), or None when it is not a belief key."""
        parts = key.split(":")
        if len(parts) < 3 or parts[0] != _PREFIX:
            return None
        if len(parts) in (5, 6) and parts[1] in KINDS and parts[2] in SUBJECT_TYPES:
            return cls(parts[1], parts[2], parts[3], parts[4],
                       parts[5] if len(parts) == 6 else None)
        if len(parts) in (3, 4):
            return cls(None, None, parts[1], parts[2], parts[3] if len(parts) == 4 else None)
        return None


def slot_of_key(key: str) -> str:
    """The slot ``key`` states (``key`` itself when it is no belief key)."""
    got = BeliefKey.parse(key)
    return got.slot if got is not None else key
