"""Output for people (rich) and for programs (``--json``) from one code path."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping
from enum import Enum
from typing import Any

from rich.console import Console

__all__ = ["console", "err_console", "print_json", "to_jsonable"]

console = Console()
err_console = Console(stderr=True)


def to_jsonable(obj: Any) -> Any:
    """Plain JSON data from dataclasses, pydantic models, enums, sets, bytes."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if hasattr(obj, "model_dump"):
        return to_jsonable(obj.model_dump(mode="json"))
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, set | frozenset):
        return sorted(to_jsonable(v) for v in obj)
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, bytes):
        return f"<{len(obj)} bytes>"
    return obj


def print_json(obj: Any) -> None:
    """One JSON document on stdout."""
    sys.stdout.write(json.dumps(to_jsonable(obj), ensure_ascii=False) + "\n")
    sys.stdout.flush()
