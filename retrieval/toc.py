"""A scope's table of contents: typed nodes over time (year -> month -> week -> day ->
segment), what their ids mean, and how a text becomes a node's keywords.

Every node carries its span, how many entries it covers, its top tags, keywords and
actors, and a summary; a segment (a run of entries without a long gap, within one day)
lists its entries. Node ids say where a node sits in time, so a walk can skip a node that
misses a period without reading it:

======== ============================ ==========================================
level    id                           span
======== ============================ ==========================================
root     ``root``                     everything
year     ``y2023``                    the year
month    ``m2023-05``                 the month
week     ``w2023-05-01``              the days of an ISO week within the month,
                                      from the day named (a Monday, or the 1st)
day      ``d2023-05-08``              the day (UTC)
segment  ``s2023-05-08.0``            within the day; ``.k``: its k-th segment
======== ============================ ==========================================

The nodes are stored by :class:`blackboard.toc.TocStore` (JSON, one hash per scope) and
built by the ``timeline`` worker role (:mod:`consolidation.toc`). Data in Redis is read
defensively: a node that does not decode is skipped, never raised on.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum
from typing import Any

from blackboard import InvalidArgument

__all__ = [
    "ROOT_ID",
    "Level",
    "TocNode",
    "keywords_of",
    "merge",
    "node_ids_for",
    "node_of",
    "parse_at",
    "parse_ref",
    "span_of",
    "top",
]

ROOT_ID = "root"


class Level(StrEnum):
    ROOT = "root"
    YEAR = "year"
    MONTH = "month"
    WEEK = "week"
    DAY = "day"
    SEGMENT = "segment"

    @property
    def depth(self) -> int:
        return list(Level).index(self)


_PREFIX = {Level.YEAR: "y", Level.MONTH: "m", Level.WEEK: "w", Level.DAY: "d",
           Level.SEGMENT: "s"}
_LEVEL_OF = {v: k for k, v in _PREFIX.items()}


def _ms(d: datetime) -> int:
    return int(d.timestamp() * 1000)


def _day_start(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def _month_end(d: date) -> date:
    nxt = date(d.year + d.month // 12, d.month % 12 + 1, 1)
    return nxt - timedelta(days=1)


def _week_start(d: date) -> date:
    """The first day of ``d``'s ISO week within its month."""
    return max(d - timedelta(days=d.weekday()), d.replace(day=1))


def node_ids_for(ms: int) -> tuple[str, str, str, str]:
    """The year, month, week and day ids of a moment (ms since the epoch, UTC)."""
    return _day_ids(ms // 86_400_000)


@functools.lru_cache(maxsize=4096)
def _day_ids(day: int) -> tuple[str, str, str, str]:
    # Per day since the epoch: the timeline role asks for every entry it places, and a
    # batch's entries fall on few days (a datetime per entry was a tenth of its CPU).
    d = date(1970, 1, 1) + timedelta(days=day)
    return (f"y{d.year:04d}", f"m{d.year:04d}-{d.month:02d}",
            f"w{_week_start(d).isoformat()}", f"d{d.isoformat()}")


_ID = re.compile(r"^(?:(root)|y(\d{4})|m(\d{4})-(\d{2})|([wd])(\d{4}-\d{2}-\d{2})|"
                 r"s(\d{4}-\d{2}-\d{2})\.(\d{1,6}))$")


def span_of(node_id: str) -> tuple[Level, int, int] | None:
    """The level and the inclusive span (ms) a node id stands for; None when ``node_id`` is
    not a node id. A segment's span is its day's (its own is in the node)."""
    m = _ID.match(node_id)
    if m is None:
        return None
    try:
        if m[1]:
            return Level.ROOT, 0, 2**62
        if m[2]:
            y = int(m[2])
            return Level.YEAR, _ms(datetime(y, 1, 1, tzinfo=UTC)), \
                _ms(datetime(y + 1, 1, 1, tzinfo=UTC)) - 1
        if m[3]:
            d = date(int(m[3]), int(m[4]), 1)
            return Level.MONTH, _ms(_day_start(d)), \
                _ms(_day_start(_month_end(d)) + timedelta(days=1)) - 1
        if m[5]:
            d = date.fromisoformat(m[6])
            if m[5] == "d":
                return Level.DAY, _ms(_day_start(d)), _ms(_day_start(d) + timedelta(days=1)) - 1
            end = min(d - timedelta(days=d.weekday()) + timedelta(days=6), _month_end(d))
            return Level.WEEK, _ms(_day_start(d)), _ms(_day_start(end) + timedelta(days=1)) - 1
        d = date.fromisoformat(m[7])
        return Level.SEGMENT, _ms(_day_start(d)), _ms(_day_start(d) + timedelta(days=1)) - 1
    except ValueError:  # 2023-13, 2023-02-30: shaped like an id, names no time
        return None


_AT = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")


def parse_at(at: str, level: str | None = None) -> str:
    """The id of the node of ``level`` holding ``at``: ``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD``
    or a node id (``w2023-05-01``, ``s2023-05-08.0``). Without ``level``, the level ``at``
    names. InvalidArgument naming the field for anything else."""
    lvl = _level(level)
    if not isinstance(at, str):
        raise InvalidArgument("at: must be a string such as 2023, 2023-05 or 2023-05-08")
    at = at.strip()
    got = span_of(at)
    if got is not None:
        if lvl is None or lvl is got[0]:
            return at
        start = got[1]
    else:
        m = _AT.match(at)
        try:
            if m is None:
                raise ValueError(at)
            d = date(int(m[1]), int(m[2] or 1), int(m[3] or 1))
        except ValueError:
            raise InvalidArgument(
                f"at: {at[:40]!r} is not a date; send YYYY, YYYY-MM, YYYY-MM-DD or a node id "
                "such as w2023-05-01") from None
        named = Level.DAY if m[3] else Level.MONTH if m[2] else Level.YEAR
        lvl = lvl or named
        start = _ms(_day_start(d))
    if lvl is Level.ROOT:
        return ROOT_ID
    if lvl is Level.SEGMENT:
        raise InvalidArgument("level: a segment is named by its id (s2023-05-08.0); "
                              "send level=day to list a day's segments")
    y, mo, w, d_ = node_ids_for(start)
    return {Level.YEAR: y, Level.MONTH: mo, Level.WEEK: w, Level.DAY: d_}[lvl]


def _level(level: str | None) -> Level | None:
    if level is None or level == "":
        return None
    try:
        return Level(level)
    except ValueError:
        raise InvalidArgument(
            f"level: {str(level)[:20]!r} is not a level; send one of "
            f"{', '.join(lv.value for lv in Level)}") from None


_WORD = re.compile(r"[a-z][a-z0-9'\u2019-]*[a-z0-9]")
#: Words that say nothing about what a stretch of time held (chat filler on top of the
#: English stopwords).
_FILLER = frozenset({
    "yeah", "yes", "hey", "wow", "really", "just", "also", "like", "got", "get", "know",
    "think", "going", "thanks", "thank", "sure", "lot", "much", "well", "good", "great", "oh",
    "okay", "ok", "that's", "it's", "i'm", "i've", "you're", "don't", "can't"})


@functools.cache
def _stop() -> frozenset[str]:
    # bm25s's list, imported on first use: bm25s loads numpy, and ``import memory`` (which
    # reads tables of contents) must load no index library (tests/retrieval/test_import_cost)
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    return frozenset(STOPWORDS_EN_PLUS) | _FILLER


def keywords_of(text: str) -> list[str]:
    """The content words of ``text``, lowercased, in order (stopwords and 1-2 letter words
    dropped): a node's keywords are the most frequent of its entries'."""
    stop = _stop()
    return [w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in stop]


def top(counts: Mapping[str, int], n: int) -> dict[str, int]:
    """The ``n`` largest counts, ties by name (deterministic)."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n])


def _counts(v: Any) -> dict[str, int]:
    if not isinstance(v, Mapping):
        return {}
    return {str(k): int(c) for k, c in v.items()
            if isinstance(c, int) and not isinstance(c, bool)}


def _strs(v: Any) -> tuple[str, ...]:
    return tuple(str(x) for x in v) if isinstance(v, list) else ()


@dataclass(frozen=True, slots=True)
class TocNode:
    """One node of a scope's table of contents.

    ``tags``, ``keywords``, ``actors``: the most frequent, with counts; ``children``: child
    node ids (a segment has none); ``entries``: a segment's entry ids, in time order.
    """

    id: str
    level: Level
    scope: str
    start_ms: int
    end_ms: int
    count: int
    summary: str = ""
    tags: dict[str, int] = field(default_factory=dict)
    keywords: dict[str, int] = field(default_factory=dict)
    actors: dict[str, int] = field(default_factory=dict)
    children: tuple[str, ...] = ()
    entries: tuple[str, ...] = ()
    #: the count when the summary was last chosen (it is chosen again as the count doubles)
    summarized: int = 0

    @property
    def ref(self) -> str:
        """``<scope>#<id>``: names the node across scopes (what ``expand`` takes)."""
        return f"{self.scope}#{self.id}"

    def to_json(self) -> str:
        return json.dumps({
            "level": self.level.value, "start": self.start_ms, "end": self.end_ms,
            "count": self.count, "summary": self.summary, "tags": self.tags,
            "kw": self.keywords, "actors": self.actors, "children": list(self.children),
            "entries": list(self.entries), "sa": self.summarized,
        }, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, scope: str, node_id: str, raw: str | None) -> TocNode | None:
        """The node stored as ``raw``; None when absent or not a node (data in Redis is
        checked, not trusted: an agent may write its own scope's keys)."""
        if not raw:
            return None
        try:
            d = json.loads(raw)
            return cls(node_id, Level(d["level"]), scope, int(d["start"]), int(d["end"]),
                       int(d["count"]), str(d.get("summary", "")), _counts(d.get("tags")),
                       _counts(d.get("kw")), _counts(d.get("actors")),
                       _strs(d.get("children")), _strs(d.get("entries")),
                       int(d.get("sa", 0)))
        except (ValueError, TypeError, KeyError, AttributeError):
            return None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (REST, MCP, ``--json``)."""
        return {"id": self.id, "ref": self.ref, "level": self.level.value, "scope": self.scope,
                "start_ms": self.start_ms, "end_ms": self.end_ms,
                "start": _iso(self.start_ms), "end": _iso(self.end_ms), "count": self.count,
                "summary": self.summary, "tags": self.tags, "keywords": self.keywords,
                "actors": self.actors, "children": list(self.children),
                "entries": list(self.entries)}


def node_of(d: Mapping[str, Any]) -> TocNode:
    """A node from :meth:`TocNode.as_dict` (what REST returns); ValueError when it is not."""
    try:
        return TocNode(str(d["id"]), Level(d["level"]), str(d["scope"]), int(d["start_ms"]),
                       int(d["end_ms"]), int(d["count"]), str(d.get("summary", "")),
                       _counts(d.get("tags")), _counts(d.get("keywords")),
                       _counts(d.get("actors")), _strs(d.get("children")),
                       _strs(d.get("entries")))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a table of contents node: {exc}") from None


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="seconds")


def parse_ref(ref: str, scopes: Iterable[str] = ()) -> tuple[str, str]:
    """``<scope>#<id>`` -> (scope, id); a bare id takes the only scope of ``scopes``.
    InvalidArgument naming the field otherwise."""
    if not isinstance(ref, str) or not ref:
        raise InvalidArgument("segment: send a segment ref such as "
                              "agent:a1:ltm:episodic#s2023-05-08.0")
    scope, sep, node = ref.rpartition("#")
    if not sep:
        only = list(scopes)
        if len(only) != 1:
            raise InvalidArgument(f"segment: {ref[:60]!r} names no scope; send "
                                  "<scope>#<segment id> as timeline returns it (ref)")
        scope, node = only[0], ref
    got = span_of(node)
    if got is None or got[0] is not Level.SEGMENT:
        raise InvalidArgument(f"segment: {node[:40]!r} is not a segment id "
                              "(s<YYYY-MM-DD>.<k>)")
    return scope, node


def merge(nodes: Sequence[TocNode]) -> TocNode:
    """One view of the same node id over several scopes: counts and spans combined, the
    summaries joined; scope is the scopes' names joined by ``,``."""
    if len(nodes) == 1:
        return nodes[0]
    first = nodes[0]

    def add(attr: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in nodes:
            for k, c in getattr(n, attr).items():
                out[k] = out.get(k, 0) + c
        return top(out, 64)

    return TocNode(first.id, first.level, ",".join(n.scope for n in nodes),
                   min(n.start_ms for n in nodes), max(n.end_ms for n in nodes),
                   sum(n.count for n in nodes), " / ".join(n.summary for n in nodes if n.summary),
                   add("tags"), add("keywords"), add("actors"),
                   tuple(dict.fromkeys(c for n in nodes for c in n.children)),
                   tuple(e for n in nodes for e in n.entries))
