"""Periods built around other dates, for :mod:`retrieval.timeline`: ranges ("between May and
July", "from 3 to 9 May 2023", "between 2020 and 2022") and the week or day before or after
a date ("the week before 20 May"). Each end is one date, month or year
(:func:`retrieval.timeline.point`); an end without a year takes the other end's, and a
bare day number the other end's month."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from .timeline_words import DAY_MS_SPAN, MON, YEAR, Period

__all__ = ["spans"]

_RANGE = re.compile(r"\b(?:between|from)\s+")
_JOIN = re.compile(r"\s+(?:and|to|until|till|through|-)\s+")
_AROUND = re.compile(r"\bthe\s+(week|day)\s+(before|after)\s+")
_TOKEN = re.compile(r"[^\s]+")
#: How many words an end of a range may have ("Sunday, 7 May 2023": 4).
_MAX_WORDS = 4

Span = tuple[int, int, Period | None]


def _ends(text: str, at: int) -> list[tuple[int, str]]:
    """The texts of 1..4 words from ``at``, longest first, with where each ends."""
    toks = [m for m in _TOKEN.finditer(text, at)][:_MAX_WORDS]
    return [(toks[i].end(), text[at:toks[i].end()]) for i in reversed(range(len(toks)))]


def _range(text: str, m: re.Match[str], a: datetime) -> Span | None:
    """A range starting at the keyword ``m`` ("between", "from"): both ends must parse."""
    from .timeline import point

    for j in _JOIN.finditer(text, m.end(), min(len(text), m.end() + 40)):
        first = text[m.end():j.start()]
        for end, second in _ends(text, j.end()):
            hi = point(second, a)
            if hi is None:
                continue
            year = re.search(YEAR, second)
            mon = re.search(MON, second)
            lo = point(first, a, year[1] if year else None, mon[1] if mon else None)
            if lo is not None and lo[0] <= hi[1]:
                return m.start(), end, (lo[0], hi[1])
        return None  # only the first joining word: "from May to June and July"
    return None


def _around(text: str, m: re.Match[str], a: datetime) -> Span | None:
    """The week or day before or after the one day that follows ``m``."""
    from .timeline import point

    for end, date in _ends(text, m.end()):
        p = point(date, a)
        if p is None or p[1] - p[0] >= DAY_MS_SPAN:
            continue
        n = 7 if m[1] == "week" else 1
        step = timedelta(days=n).total_seconds() * 1000
        got = (int(p[0] - step), p[0] - 1) if m[2] == "before" else (p[1] + 1, int(p[1] + step))
        return m.start(), end, got
    return None


def spans(text: str, a: datetime) -> list[Span]:
    """Every range and period around a date in ``text`` (lower case): (start, end) of its
    text and the period."""
    out = []
    for rx, build in ((_RANGE, _range), (_AROUND, _around)):
        for m in rx.finditer(text):
            got = build(text, m, a)
            if got is not None:
                out.append(got)
    return out
