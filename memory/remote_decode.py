"""A gateway's answers back as the library's objects and exceptions (for
:mod:`memory.remote`): error bodies ``{error, detail, field}`` raise the exception the
``error`` names, maps and stats become :class:`~memory.MemoryMap` and
:class:`~memory.ScopeStats` again."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from typing import Any, NoReturn

from blackboard import (
    AccessDenied,
    BlackboardError,
    EntryTooLarge,
    InvalidArgument,
    NotFound,
    ServerUnavailable,
    VersionConflict,
)
from blackboard.errors import QuotaExceeded

from .config import LevelConfig, ScopeConfig
from .levels import MemoryLevel
from .memory_map import EdgeView, MemoryMap, ScopeView
from .naming import OwnerKind
from .response_bodies import ErrorBody, MapOut, StatsOut
from .stats import PoolStats, ScopeStats, StrengthHistogram

__all__ = ["RateLimited", "map_of", "raise_for", "stats_of"]


class RateLimited(BlackboardError):
    """The gateway's per-token rate limit refused the request (429); ``retry_after``
    seconds (None if the gateway did not say)."""

    def __init__(self, detail: str, retry_after: float | None) -> None:
        super().__init__(detail)
        self.retry_after = retry_after


# The gateway's own kinds (not library exception names), by the library type that fits.
_GATEWAY_KINDS: dict[str, type[BlackboardError]] = {
    "unauthorized": AccessDenied,       # no, malformed or revoked token
    "validation": InvalidArgument,      # a request field failed its model (422)
    "body_too_large": EntryTooLarge,    # over the gateway's body limit (413)
}

_BY_STATUS: dict[int, type[BlackboardError]] = {
    401: AccessDenied, 403: AccessDenied, 404: NotFound, 409: VersionConflict,
    413: EntryTooLarge, 422: InvalidArgument, 503: ServerUnavailable,
}


@cache
def _library_types() -> dict[str, type[BlackboardError]]:
    """Every loaded BlackboardError subclass by name (the name is the ``error`` kind)."""
    out: dict[str, type[BlackboardError]] = {}
    todo: list[type[BlackboardError]] = [BlackboardError]
    while todo:
        t = todo.pop()
        out.setdefault(t.__name__, t)
        todo += t.__subclasses__()
    return out


_VERSION = re.compile(r"entry (\S+) is at version (\d+), not the expected (\d+)")
_SIZE = re.compile(r"(\d+) bytes.*?limit of (\d+)")
_QUOTA = re.compile(r"quota (\S+) .*?limit (-?\d+), in use (-?\d+), this write adds (-?\d+) "
                    r"\(the entry alone (-?\d+)\)")


def _build(typ: type[BlackboardError], detail: str) -> BlackboardError:
    """``typ`` carrying ``detail`` as its message; the attributes of the types that have
    them (VersionConflict, EntryTooLarge) read back from the detail when it states them."""
    exc: BlackboardError
    if issubclass(typ, VersionConflict):
        vc = Exception.__new__(typ)
        m = _VERSION.search(detail)
        vc.entry_id, vc.expected, vc.actual = (
            (m.group(1), int(m.group(3)), int(m.group(2))) if m else ("", 0, 0))
        exc = vc
    elif issubclass(typ, EntryTooLarge):
        big = Exception.__new__(typ)
        m = _SIZE.search(detail)
        big.size, big.limit = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        exc = big
    elif issubclass(typ, QuotaExceeded):
        q = Exception.__new__(typ)
        m = _QUOTA.search(detail)
        q.quota = m.group(1) if m else ""
        q.limit, q.use, q.need, q.alone = (
            [int(m.group(i)) for i in range(2, 6)] if m else [0, 0, 0, 0])
        exc = q
    else:
        try:
            exc = typ(detail)
        except TypeError:  # a constructor with other arguments: set the message only
            exc = Exception.__new__(typ)
    exc.args = (detail,)
    return exc


def raise_for(status: int, content: bytes, headers: Mapping[str, str]) -> NoReturn:
    """Raise what a gateway's failed answer names, with its detail (``.status`` and
    ``.field`` set on the exception: the HTTP status and the request field at fault)."""
    try:
        body = ErrorBody.model_validate(json.loads(content))
    except ValueError:
        text = content.decode(errors="replace").strip()[:300]
        body = ErrorBody(error=f"http_{status}", detail=text or f"HTTP {status}")
    exc: BlackboardError
    if status == 429 or body.error == "rate_limited":
        ra = headers.get("retry-after")
        exc = RateLimited(body.detail, float(ra) if ra and _number(ra) else None)
    else:
        typ = (_library_types().get(body.error) or _GATEWAY_KINDS.get(body.error)
               or _BY_STATUS.get(status, BlackboardError))
        exc = _build(typ, body.detail)
    exc.status = status  # type: ignore[attr-defined]
    exc.field = body.field  # type: ignore[attr-defined]
    raise exc


def _number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _config(d: Mapping[str, Any] | None) -> ScopeConfig | None:
    if d is None:
        return None
    limits = LevelConfig(**{k: d[k] for k in LevelConfig.__dataclass_fields__ if k in d})
    level = MemoryLevel(d["level"]) if d.get("level") else None
    return ScopeConfig(d["scope"], OwnerKind(d["kind"]), d["owner"], level, limits)


def map_of(m: MapOut) -> MemoryMap:
    """A :class:`MemoryMap` from the gateway's ``/v1/map`` answer."""
    scopes = tuple(ScopeView(s["scope"], s["kind"], s["owner"], s.get("level"),
                             _config(s.get("config")), int(s["count"]), bool(s["writable"]))
                   for s in m.scopes)
    edges = tuple(EdgeView(e["edge"], e["source"], e["target"], e["transformer"],
                           e["pattern"], int(e["pending"])) for e in m.edges)
    return MemoryMap(m.agent, tuple(m.teams), scopes, edges)


def stats_of(s: StatsOut) -> dict[str, ScopeStats]:
    """``{scope: ScopeStats}`` from the gateway's ``/v1/stats`` answer."""
    out = {}
    for name, d in s.scopes.items():
        h = d["strength"]
        out[name] = ScopeStats(d["scope"], int(d["count"]), dict(d["tags"]), d["oldest_ms"],
                               d["newest_ms"],
                               StrengthHistogram(tuple(h["edges"]), tuple(h["counts"]),
                                                 int(h.get("below_threshold", 0)),
                                                 bool(h.get("exact", True))),
                               _pool(d))
    return out


def _pool(d: dict[str, Any]) -> PoolStats | None:
    """The pool statistics of a ``/v1/stats`` scope (None from a gateway without them)."""
    if "removed" not in d:
        return None
    return PoolStats(removed={str(k): int(v) for k, v in d["removed"].items()},
                     agents={str(k): int(v) for k, v in d.get("agents", {}).items()},
                     avg_strength=d.get("avg_strength"), sampled=int(d.get("sampled", 0)))
