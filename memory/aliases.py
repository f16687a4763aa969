"""One name per concept on every surface (SDK, CLI, REST, MCP): the canonical name of each
parameter that had several, and the old names still accepted.

The canonical name is the SDK's: ``MemoryQuery.max_results`` (the design's contract) and
``AgentMemory.store(ttl=...)``. The old names keep working everywhere they worked before,
each with a one-time deprecation note (per process and surface), so no caller breaks: the
SDK raises a ``DeprecationWarning``, the CLI prints a line on stderr, REST logs a warning.
The CLI's hidden flags (``--limit``), the REST models' accepted keys (``limit``,
``ttl_s``) and the notes are all read from :data:`ALIASES`; nothing else spells them.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from blackboard import InvalidArgument

__all__ = [
    "ALIASES", "canonical_name", "cli_flag", "deprecated_keyword", "deprecation_note",
    "logged_alias", "rename_aliases",
]

log = logging.getLogger(__name__)

#: canonical name -> the older names still accepted (deprecated). Concepts:
#: ``max_results``: how many hits a recall returns at most (was ``limit`` in the CLI,
#: MCP and ``recall(limit=...)``); ``ttl``: seconds until an entry expires (was ``ttl_s``
#: in REST, ``ttl_seconds`` in MCP).
ALIASES: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType({
    "max_results": ("limit",),
    "ttl": ("ttl_s", "ttl_seconds"),
})

#: (surface, old name) pairs already noted in this process: each note is said once.
_noted: set[tuple[str, str]] = set()


def canonical_name(name: str) -> str:
    """The canonical name of ``name`` (itself when it is canonical or unknown)."""
    for canonical, old in ALIASES.items():
        if name in old:
            return canonical
    return name


def cli_flag(name: str) -> str:
    """The command-line flag spelling of a parameter name: ``max_results`` -> ``--max-results``."""
    return "--" + name.replace("_", "-")


def deprecation_note(old: str, surface: str, *, flags: bool = False) -> str | None:
    """The deprecation note for ``old`` used on ``surface`` the first time in this process,
    None after (a loop calling with the old name is told once, not flooded). ``flags``:
    name both as command-line flags (``--limit``, ``--max-results``)."""
    if (surface, old) in _noted:
        return None
    _noted.add((surface, old))
    new = canonical_name(old)
    if flags:
        return f"{surface}: {cli_flag(old)} is deprecated, use {cli_flag(new)} (same meaning)"
    return f"{surface}: {old!r} is deprecated, use {new!r} (same meaning)"


def rename_aliases(data: Any, names: tuple[str, ...], surface: str) -> Any:
    """``data`` (a request body) with the old names of ``names`` renamed to the canonical
    ones, logging each old name's note once. An old name beside its canonical one is
    left in place, so the model refuses it as an unknown field (two values, one meaning)."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for canonical in names:
        for old in ALIASES[canonical]:
            if old in out and canonical not in out:
                out[canonical] = out.pop(old)
                if (note := deprecation_note(old, surface)) is not None:
                    log.warning(note)
    return out


def deprecated_keyword(value: Any, old_value: Any, old: str, where: str) -> Any:
    """The value of a keyword whose old name ``old`` is still accepted: ``value`` (the
    canonical keyword's), else ``old_value`` with a one-time ``DeprecationWarning``. Both
    given is :class:`~blackboard.InvalidArgument`: two values, one meaning."""
    if old_value is None:
        return value
    note = _one_of(value, old, where)
    if note is not None:
        warnings.warn(note, DeprecationWarning, stacklevel=3)
    return old_value


def logged_alias(value: Any, old_value: Any, old: str, where: str) -> Any:
    """As :func:`deprecated_keyword` for a surface whose callers read no Python warnings
    (MCP tool arguments): the one-time note is logged."""
    if old_value is None:
        return value
    note = _one_of(value, old, where)
    if note is not None:
        log.warning(note)
    return old_value


def _one_of(value: Any, old: str, where: str) -> str | None:
    """Refuse the canonical name beside its old one; else the old name's note (once)."""
    if value is not None:
        raise InvalidArgument(
            f"{where}: give {canonical_name(old)} only ({old} is its deprecated name)")
    return deprecation_note(old, where)
