"""The vocabulary and calendar arithmetic of :mod:`retrieval.timeline`: month, weekday,
ordinal and number words, the regex pieces built from them, and periods of days, weeks,
months and years (inclusive UTC ms ranges)."""

from __future__ import annotations

import calendar
from datetime import UTC, datetime, timedelta

__all__ = [
    "DAY", "DAY_MS_SPAN", "MON", "MONTHS", "NUM", "ORDINALS", "SEASONS", "WEEKDAY",
    "WEEKDAYS", "YEAR", "Period", "day", "day_number", "month", "ms_day", "span", "week",
    "whole_year", "year_of",
]

Period = tuple[int, int]

MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
MONTHS["sept"] = 9
WEEKDAYS = {d.lower(): i for i, d in enumerate(calendar.day_name)}
NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
       "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "few": 3}
# Meteorological seasons (northern hemisphere): the month each starts and its length.
SEASONS = {"spring": (3, 3), "summer": (6, 3), "autumn": (9, 3), "fall": (9, 3),
           "winter": (12, 3)}

_UNITS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
          "ninth", "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth",
          "sixteenth", "seventeenth", "eighteenth", "nineteenth"]
#: Ordinal words of the days of a month: "first" 1 ... "thirty-first" 31.
ORDINAL_DAYS = {w: i + 1 for i, w in enumerate(_UNITS)}
ORDINAL_DAYS.update({"twentieth": 20, "thirtieth": 30, "thirty-first": 31})
ORDINAL_DAYS.update({f"twenty-{w}": 20 + i + 1 for i, w in enumerate(_UNITS[:9])})

# A month name, abbreviated or not, with an optional dot ("Jan."); group 1 the name.
MON = (r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
       r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)(?:\.|\b)")
DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
YEAR = r"((?:19|20)\d{2})"
WEEKDAY = "(" + "|".join(WEEKDAYS) + ")"
ORDINALS = "(" + "|".join(sorted(ORDINAL_DAYS, key=len, reverse=True)) + ")"


def day_number(s: str) -> int:
    """The day of month ``s`` names: "7", "7th" or "seventh"."""
    s = s.strip()
    if s in ORDINAL_DAYS:
        return ORDINAL_DAYS[s]
    return int(s.rstrip("stndrh"))


def ms(d: datetime) -> int:
    return int(d.timestamp() * 1000)


def span(start: datetime, end: datetime) -> Period:
    """``[start, end)`` as an inclusive ms period."""
    return ms(start), ms(end) - 1


def day(y: int, m: int, d: int) -> Period | None:
    """One day; None when there is no such date."""
    try:
        start = datetime(y, m, d, tzinfo=UTC)
    except ValueError:
        return None
    return span(start, start + timedelta(days=1))


def month(y: int, m: int, n: int = 1) -> Period:
    """``n`` months from month ``m`` of year ``y``."""
    start = datetime(y, m, 1, tzinfo=UTC)
    ey, em = divmod(m - 1 + n, 12)
    return span(start, datetime(y + ey, em + 1, 1, tzinfo=UTC))


def whole_year(y: int) -> Period:
    return span(datetime(y, 1, 1, tzinfo=UTC), datetime(y + 1, 1, 1, tzinfo=UTC))


def year_of(m: int, d: int, anchor: datetime) -> int:
    """The year a date without one means: the anchor's, unless that is after the anchor."""
    try:
        return anchor.year - 1 if datetime(anchor.year, m, d, tzinfo=UTC) > anchor else anchor.year
    except ValueError:
        return anchor.year


def ms_day(d: datetime) -> datetime:
    """Midnight (UTC) of ``d``'s day."""
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def week(d: datetime) -> Period:
    """The week (Monday first) holding ``d``."""
    start = ms_day(d) - timedelta(days=d.weekday())
    return span(start, start + timedelta(days=7))
DAY_MS_SPAN = 86_400_000  # one day, in ms (a period shorter than this is one day)
