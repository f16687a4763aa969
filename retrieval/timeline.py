"""Time in a query, resolved against the memory's own timeline (LLM-free, deterministic).

:func:`resolve_periods` finds dates and relative expressions in a query ("in May 2023",
"on 7 May", "last summer", "two weeks ago", "yesterday") and turns each into an inclusive
``(start_ms, end_ms)`` period (UTC). Relative expressions count from ``anchor_ms``: the
newest moment the searched memory holds (a conversation's latest session), never the wall
clock, so "last month" means the month before the conversation's last one. A date without
a year takes the anchor's year, or the year before when that would be after the anchor.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

__all__ = ["resolve_periods"]

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
_MONTHS["sept"] = 9
_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
        "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "few": 3}
# Meteorological seasons (northern hemisphere): the month each starts and its length.
_SEASONS = {"spring": (3, 3), "summer": (6, 3), "autumn": (9, 3), "fall": (9, 3),
            "winter": (12, 3)}

_MON = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|" \
       r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d{2})"
_ISO = re.compile(r"\b" + _YEAR + r"-(\d{2})-(\d{2})\b")
_DAY_MON = re.compile(r"\b" + _DAY + r"\s+(?:of\s+)?" + _MON + r"\b,?(?:\s+" + _YEAR + r")?")
_MON_DAY = re.compile(r"\b" + _MON + r"\s+" + _DAY + r"\b(?:,?\s+" + _YEAR + r")?")
_MON_YEAR = re.compile(r"\b" + _MON + r",?\s+(?:of\s+)?" + _YEAR + r"\b")
_IN_MON = re.compile(r"\b(?:in|during|since|of)\s+" + _MON + r"\b(?!\s*\d)")
_YEAR_ONLY = re.compile(r"\b(?:in|during|of|since)\s+" + _YEAR + r"\b")
_REL_DAY = re.compile(r"\b(yesterday|today|the day before yesterday)\b")
_REL_UNIT = re.compile(r"\b(last|this|past|previous)\s+(week|month|year|weekend)\b")
# a season only with a qualifier: "fall" and "spring" alone are mostly verbs and nouns
_SEASON = re.compile(r"\b(last|this|past|previous|in|during|in\s+the|during\s+the)\s+"
                     r"(spring|summer|autumn|fall|winter)\b(?:\s+(?:of\s+)?" + _YEAR + r")?")
_AGO = re.compile(r"\b(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|"
                  r"couple of|few)\s+(day|week|month|year)s?\s+ago\b")

Period = tuple[int, int]


def _ms(d: datetime) -> int:
    return int(d.timestamp() * 1000)


def _span(start: datetime, end: datetime) -> Period:
    """``[start, end)`` as an inclusive ms period."""
    return _ms(start), _ms(end) - 1


def _day(y: int, m: int, d: int) -> Period | None:
    try:
        start = datetime(y, m, d, tzinfo=UTC)
    except ValueError:
        return None
    return _span(start, start + timedelta(days=1))


def _month(y: int, m: int, n: int = 1) -> Period:
    start = datetime(y, m, 1, tzinfo=UTC)
    ey, em = divmod(m - 1 + n, 12)
    return _span(start, datetime(y + ey, em + 1, 1, tzinfo=UTC))


def _whole_year(y: int) -> Period:
    return _span(datetime(y, 1, 1, tzinfo=UTC), datetime(y + 1, 1, 1, tzinfo=UTC))


def _year_of(m: int, d: int, anchor: datetime) -> int:
    """The year a date without one means: the anchor's, unless that is after the anchor."""
    try:
        return anchor.year - 1 if datetime(anchor.year, m, d, tzinfo=UTC) > anchor else anchor.year
    except ValueError:
        return anchor.year


def _ms_day(d: datetime) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def _week(d: datetime) -> Period:
    start = _ms_day(d) - timedelta(days=d.weekday())
    return _span(start, start + timedelta(days=7))


def _relative(unit: str, which: str, a: datetime) -> Period:
    back = 0 if which == "this" else 1
    if unit == "week":
        return _week(a - timedelta(weeks=back))
    if unit == "weekend":  # Saturday and Sunday of the anchor's week (Monday first) or the last
        sat = _ms_day(a) + timedelta(days=5 - a.weekday()) - timedelta(weeks=back)
        return _span(sat, sat + timedelta(days=2))
    if unit == "month":
        y, m = (a.year, a.month) if not back else ((a.year - 1, 12) if a.month == 1
                                                    else (a.year, a.month - 1))
        return _month(y, m)
    return _whole_year(a.year - back)


def _season(name: str, which: str | None, year: str | None, a: datetime) -> Period:
    m, n = _SEASONS[name]
    if year:
        return _month(int(year), m, n)
    # the latest such season that has begun by the anchor; "last": the one before it
    y = a.year if (a.month, a.day) >= (m, 1) else a.year - 1
    if which in ("last", "past", "previous"):
        y -= 1
    return _month(y, m, n)


def _ago(num: str, unit: str, a: datetime) -> Period:
    n = int(num) if num.isdigit() else _NUM[num]
    if unit == "day":
        d = a - timedelta(days=n)
        return _span(datetime(d.year, d.month, d.day, tzinfo=UTC),
                     datetime(d.year, d.month, d.day, tzinfo=UTC) + timedelta(days=1))
    if unit == "week":
        return _week(a - timedelta(weeks=n))
    if unit == "month":
        y, m = divmod(a.year * 12 + a.month - 1 - n, 12)
        return _month(y, m + 1)
    return _whole_year(a.year - n)


def _date(mon: str, day: str, year: str | None, a: datetime) -> Period | None:
    """A day named by month and day, in ``year`` or else the year :func:`_year_of` gives."""
    m, d = _MONTHS[mon], int(day)
    return _day(int(year) if year else _year_of(m, d, a), m, d)


def _in_month(mon: str, a: datetime) -> Period:
    """A month without a year: the latest one that has begun by the anchor."""
    m = _MONTHS[mon]
    return _month(a.year if m <= a.month else a.year - 1, m)


def _days_back(word: str, a: datetime) -> Period:
    """The day ``word`` (today, yesterday, the day before yesterday) names."""
    d = a - timedelta(days={"today": 0, "yesterday": 1}.get(word, 2))
    return _day(d.year, d.month, d.day) or _span(d, d)


_Resolve = Callable[[re.Match[str], datetime], Period | None]
#: Each kind of expression with the period one of its matches names, in the order they
#: claim the query's text: dates first, so "7 May 2023" is never read as "May 2023".
_KINDS: tuple[tuple[re.Pattern[str], _Resolve], ...] = (
    (_ISO, lambda m, a: _day(int(m[1]), int(m[2]), int(m[3]))),
    (_DAY_MON, lambda m, a: _date(m[2], m[1], m[3], a)),
    (_MON_DAY, lambda m, a: _date(m[1], m[2], m[3], a)),
    (_MON_YEAR, lambda m, a: _month(int(m[2]), _MONTHS[m[1]])),
    (_IN_MON, lambda m, a: _in_month(m[1], a)),
    (_SEASON, lambda m, a: _season(m[2], m[1], m[3], a)),
    (_YEAR_ONLY, lambda m, a: _whole_year(int(m[1]))),
    (_REL_DAY, lambda m, a: _days_back(m[1], a)),
    (_AGO, lambda m, a: _ago(m[1], m[2], a)),
    (_REL_UNIT, lambda m, a: _relative(m[2], m[1], a)),
)


def _claim(taken: list[bool], m: re.Match[str]) -> bool:
    """Mark ``m``'s characters taken; False (and nothing marked) when one already was."""
    if any(taken[m.start():m.end()]):
        return False
    taken[m.start():m.end()] = [True] * (m.end() - m.start())
    return True


def resolve_periods(query: str, anchor_ms: int) -> list[Period]:
    """Every period ``query`` names, as inclusive UTC ms ranges, relative ones counted from
    ``anchor_ms``; ``[]`` when it names none. Overlapping matches are resolved once, the
    most specific (longest) expression first."""
    a = datetime.fromtimestamp(anchor_ms / 1000, tz=UTC)
    text = query.lower()
    taken = [False] * len(text)
    out: list[Period] = []
    for rx, resolve in _KINDS:
        for m in rx.finditer(text):
            # an impossible date (31 February) still claims its text, naming nothing
            if _claim(taken, m) and (p := resolve(m, a)) is not None:
                out.append(p)
    return out
