"""Parsing an edge's JSON ``params`` into a transformer's frozen parameter dataclass."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from .errors import ConsolidationError

__all__ = ["InvalidParams", "parse_params"]

P = TypeVar("P")


class InvalidParams(ConsolidationError, ValueError):
    """Edge parameters a transformer does not accept."""


def parse_params(cls: type[P], params: Mapping[str, Any], transformer: str) -> P:
    """``cls(**params)`` after checking names and coercing JSON numbers and lists.

    Unknown names raise :class:`InvalidParams` listing the accepted ones, so a typo in an
    edge definition fails loudly instead of silently using a default. ``cls`` validates
    ranges in its ``__post_init__`` (raising ValueError, re-raised as InvalidParams).
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(params) - set(fields))
    if unknown:
        raise InvalidParams(f"{transformer}: unknown params {unknown}; accepted: {sorted(fields)}")
    kwargs: dict[str, Any] = {}
    for name, value in params.items():
        default = fields[name].default
        if isinstance(default, bool):
            kwargs[name] = bool(value)
        elif isinstance(default, float) and isinstance(value, int | float):
            kwargs[name] = float(value)
        elif isinstance(default, frozenset) and isinstance(value, list | tuple | set | frozenset):
            kwargs[name] = frozenset(value)
        else:
            kwargs[name] = value
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise InvalidParams(f"{transformer}: {exc}") from None
