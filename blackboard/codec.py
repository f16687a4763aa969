"""Redis replies as Python text: the one bytes -> str rule of the package.

The client is created with ``decode_responses=False`` (values are JSON or float32 bytes),
so every name, id and field it returns is ``bytes`` unless a reply parser already made it
``str`` or a number; these helpers accept all three.
"""

from __future__ import annotations

from typing import Any

__all__ = ["as_str", "decoded"]


def as_str(v: Any, errors: str = "strict") -> str:
    """``v`` as text: bytes decoded as UTF-8 (``errors`` as for :meth:`bytes.decode`;
    ``"replace"`` where a report must survive bytes written by hand), anything else
    through ``str()``."""
    return v.decode("utf-8", errors) if isinstance(v, bytes) else str(v)


def decoded(v: Any) -> Any:
    """A nested reply with every ``bytes`` decoded (strict UTF-8): lists and tuples become
    lists, dict keys and values are decoded, other values are kept as they are."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, list | tuple):
        return [decoded(x) for x in v]
    if isinstance(v, dict):
        return {decoded(k): decoded(x) for k, x in v.items()}
    return v
