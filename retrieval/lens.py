"""Lenses: named query presets (``recent_actions``, ``failures``, ``facts_about:<subject>``...).

A lens fills the fields of a :class:`retrieval.query.MemoryQuery` that the caller left
unset; anything the caller sets explicitly wins. A parameterised lens takes its argument
after a colon (``"facts_about:Alice"``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from blackboard import InvalidArgument

__all__ = [
    "LensPreset",
    "UnknownLens",
    "facts_about",
    "known_lenses",
    "register_lens",
    "resolve_lens",
]


class UnknownLens(InvalidArgument):
    """A query names a lens that is not registered."""


@dataclass(frozen=True, slots=True)
class LensPreset:
    """The query fields a lens fills (``None``: leave the caller's value or default)."""

    query: str | None = None
    all_of: frozenset[str] = frozenset()
    any_of: frozenset[str] = frozenset()
    none_of: frozenset[str] = frozenset()
    levels: tuple[str, ...] | None = None
    min_strength: float | None = None
    max_results: int | None = None
    alpha: float | None = None  # the dense weight of fusion for this kind of question
    utility: float | None = None  # the weight of feedback from use (retrieval.utility)


#: A lens maps its optional argument (the text after ``name:``) to a preset.
LensFactory = Callable[[str | None], LensPreset]

_lock = threading.Lock()
_registry: dict[str, LensFactory] = {}


def register_lens(name: str, factory: LensFactory | LensPreset, *, replace: bool = False) -> None:
    """Register a lens; a plain :class:`LensPreset` is a lens that takes no argument."""
    if not name or ":" in name:
        raise InvalidArgument(f"lens name must be non-empty and hold no ':' (got {name!r})")
    if isinstance(factory, LensPreset):
        preset = factory

        def fixed(arg: str | None) -> LensPreset:
            if arg:
                raise InvalidArgument(f"lens {name!r} takes no argument (got {arg!r})")
            return preset

        factory = fixed
    with _lock:
        if name in _registry and not replace:
            raise InvalidArgument(f"lens {name!r} is already registered")
        _registry[name] = factory


def known_lenses() -> list[str]:
    """The registered lens names, sorted."""
    with _lock:
        return sorted(_registry)


def resolve_lens(spec: str) -> LensPreset:
    """The preset of ``spec`` (``name`` or ``name:argument``); unknown names raise."""
    name, _, arg = spec.partition(":")
    with _lock:
        factory = _registry.get(name)
    if factory is None:
        raise UnknownLens(f"unknown lens {name!r}; known lenses: {', '.join(known_lenses())}")
    return factory(arg.strip() or None)


def facts_about(subject: str) -> str:
    """The lens spec for facts about ``subject`` (``MemoryQuery(lens=facts_about("Alice"))``)."""
    return f"facts_about:{subject}"


def _facts_about(subject: str | None) -> LensPreset:
    if not subject:
        raise InvalidArgument("lens 'facts_about' needs a subject: 'facts_about:<subject>'")
    return LensPreset(query=subject, any_of=frozenset({"fact"}), levels=("ltm:semantic",))


register_lens(
    "recent_actions",
    LensPreset(any_of=frozenset({"action"}), levels=("working", "stm")),
)
register_lens("failures", LensPreset(any_of=frozenset({"failure", "error"})))
register_lens("facts_about", _facts_about)
# Hits that helped the agents who gave feedback first (retrieval.utility).
register_lens("useful", LensPreset(utility=0.5))
register_lens(
    "procedures",
    LensPreset(any_of=frozenset({"procedure"}), levels=("ltm:procedural",)),
)
