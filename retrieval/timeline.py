"""Time in a query, resolved against the memory's own timeline (LLM-free, deterministic).

:func:`resolve_periods` finds dates and relative expressions in a query ("in May 2023",
"on 7 May", "5/7/2023", "the 3rd", "last summer", "two weeks ago", "last Monday", "the week
before last", "earlier this month", "in early May", "between May and July") and turns each
into an inclusive ``(start_ms, end_ms)`` period (UTC). Relative expressions count from
``anchor_ms``: the newest moment the searched memory holds (a conversation's latest
session), never the wall clock, so "last month" means the month before the conversation's
last one. A date without a year takes the anchor's year, or the year before when that
would be after the anchor; a numeric date is month first (5/7 is 7 May) unless its first
number cannot be a month, and day first with dots (7.5.2023). Ranges and parts of months
are in :mod:`retrieval.timeline_spans`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from .timeline_words import (
    DAY,
    MON,
    MONTHS,
    NUM,
    ORDINALS,
    SEASONS,
    WEEKDAY,
    WEEKDAYS,
    YEAR,
    Period,
    day,
    day_number,
    month,
    ms_day,
    span,
    week,
    whole_year,
    year_of,
)

__all__ = ["resolve_periods"]

_NUMS = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of|few)"
_ISO = re.compile(r"\b" + YEAR + r"-(\d{2})-(\d{2})\b")
_SLASH = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4}|\d{2})\b")
_YMD_SLASH = re.compile(r"\b" + YEAR + r"/(\d{1,2})/(\d{1,2})\b")
_DOTS = re.compile(r"\b(\d{1,2})\.(\d{1,2})\.(\d{4})\b")
_DAY_MON = re.compile(r"\b" + DAY + r"\s+(?:of\s+)?" + MON + r",?(?:\s+" + YEAR + r")?")
_ORD_MON = re.compile(r"\bthe\s+" + ORDINALS + r"\s+of\s+" + MON + r",?(?:\s+" + YEAR + r")?")
_MON_DAY = re.compile(r"\b" + MON + r"\s+(?:the\s+)?" + DAY + r"\b(?:,?\s+" + YEAR + r")?")
_MON_ORD = re.compile(r"\b" + MON + r"\s+the\s+" + ORDINALS + r"\b(?:,?\s+" + YEAR + r")?")
# "on the 3rd", "on the twenty-first": a day of the anchor's month (or the month before)
_BARE_DAY = re.compile(r"\bon\s+the\s+(\d{1,2}(?:st|nd|rd|th)|" + ORDINALS[1:-1] + r")\b")
_PART = re.compile(r"\b(early|mid|late|the\s+(?:start|beginning|middle|end)\s+of)[\s-]+"
                   + MON + r"(?:,?\s+" + YEAR + r")?")
_MON_YEAR = re.compile(r"\b" + MON + r",?\s+(?:of\s+)?" + YEAR + r"\b")
_IN_MON = re.compile(r"\b(?:in|during|since|of)\s+" + MON + r"(?!\s*\d)")
_YEAR_ONLY = re.compile(r"\b(?:in|during|of|since)\s+" + YEAR + r"\b")
_REL_DAY = re.compile(r"\b(yesterday|today|tonight|last night|this (?:morning|afternoon|"
                      r"evening)|the day before yesterday)\b")
# a weekday followed by a date is that date's ("last Friday, 7 May"): the date names it
_WEEKDAY = re.compile(r"\b(last|on|this|past|previous|next)\s+" + WEEKDAY
                      + r"\b(?!,?\s+(?:on\s+|of\s+)?(?:the\s+)?(?:\d|" + MON + "))")
_BEFORE_LAST = re.compile(r"\bthe\s+(week|month|year)\s+before\s+last\b")
_WEEK_BEFORE = re.compile(r"\bthe\s+week\s+before\b(?=\s*(?:[?.!,;]|$))")
_PAST_N = re.compile(r"\b(?:the\s+)?(?:past|last|previous)\s+" + _NUMS
                     + r"\s+(day|week|month|year)s\b")
_PART_OF = re.compile(r"\b(earlier|later)\s+this\s+(week|month|year)\b")
_REL_UNIT = re.compile(r"\b(last|this|past|previous|next)\s+(week|month|year|weekend)\b")
# a season only with a qualifier or a year: "fall" and "spring" alone are mostly verbs
_SEASON = re.compile(r"\b(last|this|past|previous|in|during|in\s+the|during\s+the)\s+"
                     r"(spring|summer|autumn|fall|winter)\b(?:\s+(?:of\s+)?" + YEAR + r")?")
_SEASON_YEAR = re.compile(r"\b(spring|summer|autumn|fall|winter)\s+(?:of\s+)?" + YEAR + r"\b")
_AGO = re.compile(r"\b" + _NUMS + r"\s+(day|week|month|year)s?\s+ago\b")


def _count(num: str) -> int:
    return int(num) if num.isdigit() else NUM[num]


def _relative(unit: str, which: str, a: datetime) -> Period:
    back = {"this": 0, "next": -1}.get(which, 1)
    if unit == "week":
        return week(a - timedelta(weeks=back))
    if unit == "weekend":  # Saturday and Sunday of the anchor's week (Monday first) or the last
        sat = ms_day(a) + timedelta(days=5 - a.weekday()) - timedelta(weeks=back)
        return span(sat, sat + timedelta(days=2))
    if unit == "month":
        y, m = divmod(a.year * 12 + a.month - 1 - back, 12)
        return month(y, m + 1)
    return whole_year(a.year - back)


def _season(name: str, which: str | None, year: str | None, a: datetime) -> Period:
    m, n = SEASONS[name]
    if year:
        return month(int(year), m, n)
    # the latest such season that has begun by the anchor; "last": the one before it
    y = a.year if (a.month, a.day) >= (m, 1) else a.year - 1
    if which in ("last", "past", "previous"):
        y -= 1
    return month(y, m, n)


def _ago(num: str, unit: str, a: datetime) -> Period:
    n = _count(num)
    if unit == "day":
        d = ms_day(a - timedelta(days=n))
        return span(d, d + timedelta(days=1))
    if unit == "week":
        return week(a - timedelta(weeks=n))
    if unit == "month":
        y, m = divmod(a.year * 12 + a.month - 1 - n, 12)
        return month(y, m + 1)
    return whole_year(a.year - n)


def _past_n(num: str, unit: str, a: datetime) -> Period:
    """The last ``num`` ``unit``s up to the end of the anchor's day."""
    n, end = _count(num), ms_day(a) + timedelta(days=1)
    if unit in ("day", "week"):
        return span(end - timedelta(days=n * (7 if unit == "week" else 1) + 1), end)
    months = n * (12 if unit == "year" else 1)
    y, m = divmod(a.year * 12 + a.month - 1 - months, 12)
    return span(datetime(y, m + 1, min(a.day, 28), tzinfo=UTC), end)


def _part_of(which: str, unit: str, a: datetime) -> Period:
    """Earlier/later this week, month or year: its part before or after the anchor's day."""
    start_ms, end_ms = _relative(unit, "this", a)
    today = ms_day(a)
    if which == "earlier":
        return start_ms, span(today, today + timedelta(days=1))[1]
    return span(today, today)[0], end_ms


def _date(mon: str, d: str, year: str | None, a: datetime) -> Period | None:
    """A day named by month and day, in ``year`` or else the year :func:`year_of` gives."""
    m, n = MONTHS[mon], day_number(d)
    return day(int(year) if year else year_of(m, n, a), m, n)


def _numeric(first: str, second: str, year: str, day_first: bool) -> Period | None:
    a, b, y = int(first), int(second), int(year)
    y += 2000 if y < 100 else 0
    if not day_first and a > 12:  # 25/12/2022: the first number cannot be a month
        day_first = True
    return day(y, a, b) if not day_first else day(y, b, a)


def _bare_day(d: str, a: datetime) -> Period | None:
    """The ``d``-th of the anchor's month, or of the month before when it is still ahead."""
    n = day_number(d)
    y, m = (a.year, a.month) if n <= a.day else divmod(a.year * 12 + a.month - 2, 12)
    return day(y, m if n <= a.day else m + 1, n)


def _part_of_month(part: str, mon: str, year: str | None, a: datetime) -> Period:
    """Early (1-10), mid (11-20) or late (21-end) in a month, or the start/middle/end of it."""
    m = MONTHS[mon]
    y = int(year) if year else (a.year if m <= a.month else a.year - 1)
    start, end = month(y, m)
    third = 0 if part in ("early",) or "start" in part or "beginning" in part else (
        1 if part == "mid" or "middle" in part else 2)
    first = _ms_of(y, m, 1 + 10 * third)
    last = end if third == 2 else _ms_of(y, m, 11 + 10 * third) - 1
    return max(start, first), last


def _ms_of(y: int, m: int, d: int) -> int:
    return int(datetime(y, m, d, tzinfo=UTC).timestamp() * 1000)


def _in_month(mon: str, a: datetime) -> Period:
    """A month without a year: the latest one that has begun by the anchor."""
    m = MONTHS[mon]
    return month(a.year if m <= a.month else a.year - 1, m)


def _days_back(word: str, a: datetime) -> Period:
    """The day ``word`` (today, yesterday, last night, the day before yesterday) names."""
    back = 2 if word.startswith("the day") else 1 if word in ("yesterday", "last night") else 0
    d = ms_day(a - timedelta(days=back))
    return span(d, d + timedelta(days=1))


def _weekday(which: str, name: str, a: datetime) -> Period:
    """The named weekday: the latest one on or before the anchor's day ("last": before it,
    "next": the first after it)."""
    want = WEEKDAYS[name]
    if which == "next":
        d = ms_day(a) + timedelta(days=(want - a.weekday() - 1) % 7 + 1)
    else:
        back = (a.weekday() - want) % 7
        if back == 0 and which in ("last", "past", "previous"):
            back = 7
        d = ms_day(a) - timedelta(days=back)
    return span(d, d + timedelta(days=1))


def _before_last(unit: str, a: datetime) -> Period:
    if unit == "week":
        return week(a - timedelta(weeks=2))
    if unit == "month":
        y, m = divmod(a.year * 12 + a.month - 3, 12)
        return month(y, m + 1)
    return whole_year(a.year - 2)


_Resolve = Callable[[re.Match[str], datetime], Period | None]
#: Each kind of expression with the period one of its matches names, in the order they
#: claim the query's text: dates first, so "7 May 2023" is never read as "May 2023".
_KINDS: tuple[tuple[re.Pattern[str], _Resolve], ...] = (
    (_ISO, lambda m, a: day(int(m[1]), int(m[2]), int(m[3]))),
    (_YMD_SLASH, lambda m, a: day(int(m[1]), int(m[2]), int(m[3]))),
    (_SLASH, lambda m, a: _numeric(m[1], m[2], m[3], False)),
    (_DOTS, lambda m, a: _numeric(m[1], m[2], m[3], True)),
    (_DAY_MON, lambda m, a: _date(m[2], m[1], m[3], a)),
    (_ORD_MON, lambda m, a: _date(m[2], m[1], m[3], a)),
    (_MON_DAY, lambda m, a: _date(m[1], m[2], m[3], a)),
    (_MON_ORD, lambda m, a: _date(m[1], m[2], m[3], a)),
    (_BARE_DAY, lambda m, a: _bare_day(m[1], a)),
    (_PART, lambda m, a: _part_of_month(re.sub(r"\s+", " ", m[1]), m[2], m[3], a)),
    (_MON_YEAR, lambda m, a: month(int(m[2]), MONTHS[m[1]])),
    (_IN_MON, lambda m, a: _in_month(m[1], a)),
    (_SEASON, lambda m, a: _season(m[2], m[1], m[3], a)),
    (_SEASON_YEAR, lambda m, a: _season(m[1], None, m[2], a)),
    (_YEAR_ONLY, lambda m, a: whole_year(int(m[1]))),
    (_REL_DAY, lambda m, a: _days_back(m[1], a)),
    (_WEEKDAY, lambda m, a: _weekday(m[1], m[2], a)),
    (_AGO, lambda m, a: _ago(m[1], m[2], a)),
    (_BEFORE_LAST, lambda m, a: _before_last(m[1], a)),
    (_WEEK_BEFORE, lambda m, a: _relative("week", "last", a)),
    (_PAST_N, lambda m, a: _past_n(m[1], m[2], a)),
    (_PART_OF, lambda m, a: _part_of(m[1], m[2], a)),
    (_REL_UNIT, lambda m, a: _relative(m[2], m[1], a)),
)


def _claim(taken: list[bool], start: int, end: int) -> bool:
    """Mark ``[start, end)`` taken; False (and nothing marked) when a character already was."""
    if any(taken[start:end]):
        return False
    taken[start:end] = [True] * (end - start)
    return True


def resolve_periods(query: str, anchor_ms: int) -> list[Period]:
    """Every period ``query`` names, as inclusive UTC ms ranges, relative ones counted from
    ``anchor_ms``; ``[]`` when it names none. Overlapping matches are resolved once: ranges
    and periods around a date first, then each kind of expression in a fixed order."""
    from .timeline_spans import spans  # the ranges parse their ends with this module

    a = datetime.fromtimestamp(anchor_ms / 1000, tz=UTC)
    text = query.lower()
    taken = [False] * len(text)
    out: list[Period] = []
    for start, end, p in spans(text, a):
        if _claim(taken, start, end) and p is not None:
            out.append(p)
    for rx, resolve in _KINDS:
        for m in rx.finditer(text):
            # an impossible date (31 February) still claims its text, naming nothing
            if _claim(taken, m.start(), m.end()) and (p := resolve(m, a)) is not None:
                out.append(p)
    return out


def point(text: str, a: datetime, year: str | None = None,
          mon: str | None = None) -> Period | None:
    """The period ``text`` names when it is one date, month or year and nothing else (an
    end of a range); ``year``/``mon``: the other end's, for an end that names neither."""
    t = text.strip(" ,.?!;:")
    if re.fullmatch(r"\d{1,2}(?:st|nd|rd|th)?", t):  # "between 1 and 15 May"
        return _date(mon, t, year, a) if mon else None
    if (m := re.fullmatch(MON, t)) is not None:
        return month(int(year), MONTHS[m[1]]) if year else _in_month(m[1], a)
    dated = year and not re.search(YEAR, t)
    for rx, resolve in (*_KINDS[:8], _KINDS[10]):
        m = rx.fullmatch(f"{t} {year}" if dated else t) or rx.fullmatch(t)
        if m is not None:
            return resolve(m, a)
    m = re.fullmatch(YEAR, t)
    return whole_year(int(m[1])) if m else None
