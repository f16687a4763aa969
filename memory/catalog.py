"""The transformer catalog: the names edges may use and the default dataflow edges.

Both are facts of the consolidation layer, which memory must not import (layering:
memory < consolidation). Memory asks a :class:`TransformerCatalog` instead. The package
that implements the transformers declares one under the ``blackboard.transformer_catalog``
entry point (consolidation does, in pyproject.toml); it is loaded on first use, so
``AgentMemory(...).install_default_hierarchy()`` works without importing consolidation
first. :func:`set_catalog` installs one explicitly (an embedding application, a test).
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from blackboard.validation import NAME_RULE, is_name

from .errors import InvalidEdge

if TYPE_CHECKING:
    from .subscriptions import MemorySubscription

__all__ = [
    "ENTRY_POINT_GROUP",
    "TransformerCatalog",
    "catalog",
    "forget_transformer_name",
    "known_transformers",
    "register_transformer_name",
    "set_catalog",
]

#: The entry point group a transformer package declares its catalog under.
ENTRY_POINT_GROUP = "blackboard.transformer_catalog"



@runtime_checkable
class TransformerCatalog(Protocol):
    """What memory needs to know of the transformers: their names, the default edges."""

    def transformer_names(self) -> Collection[str]: ...

    def default_edges(self, agent_id: str, teams: Iterable[str] = ()) -> list[MemorySubscription]:
        ...


_catalog: TransformerCatalog | None = None
_lock = threading.Lock()
#: Names made valid by :func:`register_transformer_name` (transformers a worker outside
#: the catalog runs), on top of the catalog's.
_extra: set[str] = set()


def set_catalog(c: TransformerCatalog | None) -> None:
    """Use ``c`` from now on; None makes the next :func:`catalog` call load the entry point."""
    global _catalog
    _catalog = c


def catalog() -> TransformerCatalog:
    """The installed catalog, loading the ``blackboard.transformer_catalog`` entry point the
    first time. LookupError names the entry point when no package declares one."""
    global _catalog
    if _catalog is None:
        with _lock:
            if _catalog is None:
                found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
                if not found:
                    raise LookupError(
                        f"no transformer catalog: no package declares the {ENTRY_POINT_GROUP!r}"
                        " entry point (install the package, or call memory.catalog.set_catalog)"
                    )
                try:
                    c = found[0].load()
                except ImportError as exc:
                    # e.g. a script named consolidation.py first on sys.path shadows the package
                    raise LookupError(
                        f"the transformer catalog {found[0].value!r} does not import: {exc}"
                    ) from exc
                if not isinstance(c, TransformerCatalog):
                    raise TypeError(f"entry point {found[0].value} is not a TransformerCatalog")
                _catalog = c
    return _catalog


def known_transformers() -> frozenset[str]:
    """Every name an edge may use: the catalog's and the registered extra ones."""
    return frozenset(catalog().transformer_names()) | _extra


def register_transformer_name(name: str) -> None:
    """Make ``name`` a valid transformer for edges though the catalog does not list it."""
    if not is_name(name):
        raise InvalidEdge(f"transformer name must match {NAME_RULE}: {name!r:.80}")
    _extra.add(name)


def forget_transformer_name(name: str) -> None:
    """Undo :func:`register_transformer_name` (absent names are ignored)."""
    _extra.discard(name)
