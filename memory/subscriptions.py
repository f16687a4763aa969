"""Dataflow edges (``MemorySubscription``): which scopes feed which, through what.

A source pattern is a scope id whose segments may hold ``*`` (any run of segment
characters, never ``:``); a target template may hold ``{n}`` placeholders bound to the
n-th ``*`` of the source (1-based). Pure logic; the registry stores the edges.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from blackboard.validation import NAME_RULE, SEGMENT_CHARS, is_name, validate_scope, validate_tags

from .catalog import known_transformers, register_transformer_name
from .errors import EdgeCycle, InvalidEdge

__all__ = [
    "MemorySubscription",
    "TagMatch",
    "Trigger",
    "check_acyclic",
    "pattern_matches",
    "register_transformer_name",
]

_PATTERN_RE = re.compile(r"[A-Za-z0-9_.*-]+(?::[A-Za-z0-9_.*-]+)*")
_PLACEHOLDER = re.compile(r"\{(\d+)\}")


@dataclass(frozen=True, slots=True)
class TagMatch:
    """A tag filter over an event's or entry's tags: all of, any of, none of."""

    all_of: frozenset[str] = frozenset()
    any_of: frozenset[str] = frozenset()
    none_of: frozenset[str] = frozenset()

    @classmethod
    def of(cls, all_of: Iterable[str] = (), any_of: Iterable[str] = (),
           none_of: Iterable[str] = ()) -> TagMatch:
        return cls(frozenset(validate_tags(all_of)), frozenset(validate_tags(any_of)),
                   frozenset(validate_tags(none_of)))

    def matches(self, tags: Iterable[str]) -> bool:
        t = set(tags)
        return (self.all_of <= t and (not self.any_of or bool(self.any_of & t))
                and not (self.none_of & t))

    def to_json(self) -> dict[str, list[str]]:
        return {"all_of": sorted(self.all_of), "any_of": sorted(self.any_of),
                "none_of": sorted(self.none_of)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TagMatch:
        return cls.of(d.get("all_of", ()), d.get("any_of", ()), d.get("none_of", ()))


@dataclass(frozen=True, slots=True)
class Trigger:
    """When an edge's buffer is flushed through its transformer: as soon as ANY set
    condition holds. ``min_count``: buffered events; ``max_age``: seconds the oldest
    buffered event has waited; ``every``: seconds between timer firings."""

    min_count: int | None = None
    max_age: float | None = None
    every: float | None = None

    def __post_init__(self) -> None:
        if self.min_count is None and self.max_age is None and self.every is None:
            raise InvalidEdge("a trigger needs a count, an age or a timer")
        if self.min_count is not None and self.min_count < 1:
            raise InvalidEdge("trigger count must be >= 1")
        for name, v in (("max_age", self.max_age), ("every", self.every)):
            if v is not None and not v > 0:
                raise InvalidEdge(f"trigger {name} must be positive seconds")

    @classmethod
    def count(cls, n: int) -> Trigger:
        return cls(min_count=n)

    @classmethod
    def age(cls, seconds: float) -> Trigger:
        return cls(max_age=seconds)

    @classmethod
    def timer(cls, seconds: float) -> Trigger:
        return cls(every=seconds)

    @classmethod
    def any_of(cls, *triggers: Trigger) -> Trigger:
        """Composite: fires when any part fires (the tightest value of each kind wins)."""
        def tight(vals: Iterable[Any]) -> Any:
            got = [v for v in vals if v is not None]
            return min(got) if got else None
        return cls(tight(t.min_count for t in triggers), tight(t.max_age for t in triggers),
                   tight(t.every for t in triggers))

    def fires(self, count: int, oldest_age: float, since_last_fire: float) -> bool:
        """Whether to flush now; ages in seconds (``oldest_age`` 0 when the buffer is empty)."""
        if self.min_count is not None and count >= self.min_count:
            return True
        if self.max_age is not None and count and oldest_age >= self.max_age:
            return True
        return self.every is not None and since_last_fire >= self.every

    def to_json(self) -> dict[str, Any]:
        return {"min_count": self.min_count, "max_age": self.max_age, "every": self.every}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Trigger:
        return cls(d.get("min_count"), d.get("max_age"), d.get("every"))


@functools.lru_cache(maxsize=1024)
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    parts = (re.escape(p) for p in pattern.split("*"))
    return re.compile(f"({SEGMENT_CHARS}+)".join(parts))


def pattern_matches(pattern: str, scope_id: str) -> bool:
    """Whether a scope pattern (``*`` within segments) matches a concrete scope id."""
    return _pattern_regex(pattern).fullmatch(scope_id) is not None


def check_pattern(pattern: str) -> str:
    if not isinstance(pattern, str) or not _PATTERN_RE.fullmatch(pattern) or len(pattern) > 200:
        raise InvalidEdge(f"scope pattern must be segments of [A-Za-z0-9_.-*]: {pattern!r:.80}")
    return pattern


@dataclass(frozen=True, slots=True)
class MemorySubscription:
    """A dataflow edge: events of scopes matching ``source`` that pass ``filter`` are
    buffered for ``target`` (a template) and flushed through ``transformer`` when
    ``trigger`` fires. ``id`` is stable (derived from source, target and transformer
    unless given) so installing the same edge twice is a no-op; it names the pending
    buffer ``bb:{pN}:pending:<id>:<target>``.

    ``version`` and ``since`` are the stored record's state, set by the registry (0 on an
    edge not read from it): the version an update compares, and the Redis ms from which
    the edge matches events. Neither is part of the edge's definition, so neither takes
    part in equality."""

    source: str
    target: str
    transformer: str
    params: Mapping[str, Any] = field(default_factory=dict)
    filter: TagMatch = TagMatch()
    trigger: Trigger = Trigger(min_count=1)
    id: str = ""
    version: int = field(default=0, compare=False)
    since: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        check_pattern(self.source)
        # The names are the consolidation registry's, learnt through memory's catalog.
        known = known_transformers()
        if self.transformer not in known:
            raise InvalidEdge(f"unknown transformer {self.transformer!r}; known: "
                              f"{sorted(known)} (register_transformer_name adds)")
        stars = self.source.count("*")
        for m in _PLACEHOLDER.finditer(self.target):
            n = int(m.group(1))
            if not 1 <= n <= stars:
                raise InvalidEdge(f"target {self.target!r} uses {{{n}}} but source "
                                  f"{self.source!r} has {stars} '*'")
        try:
            validate_scope(_PLACEHOLDER.sub("x", self.target))
        except Exception as exc:
            raise InvalidEdge(f"target template {self.target!r:.80} is not a scope id") from exc
        try:
            params = json.loads(json.dumps(dict(self.params), sort_keys=True))
        except (TypeError, ValueError) as exc:
            raise InvalidEdge("edge params must be JSON-serialisable") from exc
        object.__setattr__(self, "params", params)
        if not self.id:
            digest = hashlib.sha256(
                f"{self.source}\x1f{self.target}\x1f{self.transformer}".encode()
            ).hexdigest()[:12]
            object.__setattr__(self, "id", f"{self.transformer}-{digest}")
        if not is_name(self.id):
            raise InvalidEdge(f"edge id must match {NAME_RULE}: {self.id!r:.80}")

    def match(self, scope_id: str) -> str | None:
        """The target scope for an event of ``scope_id``, or None if the edge ignores it."""
        m = _pattern_regex(self.source).fullmatch(scope_id)
        if m is None:
            return None
        groups = m.groups()
        return _PLACEHOLDER.sub(lambda g: groups[int(g.group(1)) - 1], self.target)

    def accepts(self, scope_id: str, tags: Iterable[str], at: int | None = None) -> str | None:
        """``match`` plus the tag filter and, given the event's Redis ms ``at``, the edge's
        ``since``: the target scope, or None. An event before the edge existed is not its
        business, whenever a worker happens to read it."""
        return self.match(scope_id) if self.admits(tags, at) else None

    def admits(self, tags: Iterable[str], at: int | None = None) -> bool:
        """The per-event half of :meth:`accepts` (``match`` is the per-scope half, which a
        reader of many events of a few scopes does once a scope): the tags pass the
        filter and the event (at ``at``, when given) is not older than the edge."""
        return (at is None or at >= self.since) and self.filter.matches(tags)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "source": self.source, "target": self.target,
                "transformer": self.transformer, "params": dict(self.params),
                "filter": self.filter.to_json(), "trigger": self.trigger.to_json(),
                "version": self.version, "since": self.since}


def _segments_overlap(a: str, b: str) -> bool:
    """Whether two pattern/template segments can name the same concrete segment."""
    a, b = _PLACEHOLDER.sub("*", a), _PLACEHOLDER.sub("*", b)
    if "*" in a and "*" in b:
        return True  # conservative: two globs may always meet
    if "*" in a:
        return pattern_matches(a, b)
    if "*" in b:
        return pattern_matches(b, a)
    return a == b


def _overlap(target: str, source: str) -> bool:
    """Whether scopes written by a target template can be read by a source pattern."""
    t, s = target.split(":"), source.split(":")
    return len(t) == len(s) and all(_segments_overlap(x, y) for x, y in zip(t, s, strict=True))


def check_acyclic(edges: Iterable[MemorySubscription], new: MemorySubscription) -> None:
    """Raise :class:`EdgeCycle` if adding ``new`` to ``edges`` closes a cycle.

    Edge e1 feeds e2 when e1's target can be a scope e2's source matches; the check is
    conservative (two wildcards are assumed to meet), so it never lets a real cycle in.
    """
    graph = [e for e in edges if e.id != new.id] + [new]
    succ = {e.id: [f.id for f in graph if _overlap(e.target, f.source)] for e in graph}
    by_id = {e.id: e for e in graph}
    # Depth-first search from the new edge back to itself.
    stack, seen = [(new.id, [new.id])], set()
    while stack:
        node, path = stack.pop()
        for nxt in succ[node]:
            if nxt == new.id:
                chain = " -> ".join(f"{by_id[i].source}=>{by_id[i].target}" for i in path)
                raise EdgeCycle(f"edge {new.source} -> {new.target} closes a cycle: {chain}")
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
