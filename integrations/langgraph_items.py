"""LangGraph's ``Item`` and ``SearchItem`` made from the blackboard entries that hold a
store's items (:func:`item`, :func:`search_item`).

An item's ``created_at`` is its entry's; its ``updated_at`` is its last put, kept in the
entry's metadata when a TTL refresh has moved the entry's own.
"""

from __future__ import annotations

from .langgraph_bridge import MISSING_LANGGRAPH

try:
    from langgraph.store.base import Item, SearchItem
except ImportError as _exc:  # pragma: no cover - exercised by simulating the absence
    raise ImportError(MISSING_LANGGRAPH) from _exc

from datetime import UTC, datetime
from typing import Any

from blackboard import Entry

from . import store_paths as paths

__all__ = ["item", "search_item"]

_Found = tuple[paths.Namespace, str, dict[str, Any]]  # (namespace, key, value): paths.unwrap


def _when(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def item(e: Entry, found: _Found) -> Item:
    ns, key, value = found
    return Item(namespace=ns, key=key, value=value, created_at=_when(e.created_at),
                updated_at=_when(_updated(e)))


def search_item(e: Entry, found: _Found, score: float | None) -> SearchItem:
    ns, key, value = found
    return SearchItem(namespace=ns, key=key, value=value, created_at=_when(e.created_at),
                      updated_at=_when(_updated(e)), score=score)


def _updated(e: Entry) -> int:
    """The item's last put (a TTL refresh moves the entry's ``updated_at``, not this)."""
    kept = e.metadata.get("updated_at")
    return kept if isinstance(kept, int) else e.updated_at
