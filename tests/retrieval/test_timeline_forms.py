"""Time expressions beyond the LoCoMo dev questions (issue 31 item 3): dates in many forms,
relative days, weeks and months, seasons, ordinal days, ranges. One table; the anchor is
the newest moment of the memory, Friday 25 August 2023 15:00 UTC."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from retrieval.timeline import resolve_periods

ANCHOR = int(datetime(2023, 8, 25, 15, 0, tzinfo=UTC).timestamp() * 1000)


def _days(query: str) -> list[tuple[str, str]]:
    def d(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, UTC).date().isoformat()

    return sorted((d(a), d(b)) for a, b in resolve_periods(query, ANCHOR))


MAY7 = [("2023-05-07", "2023-05-07")]

TABLE = [
    # one day, written many ways
    ("on 5/7/2023", MAY7),                       # US month/day/year
    ("on 05/07/23", MAY7),
    ("on 2023/05/07", MAY7),
    ("on 25/12/2022", [("2022-12-25", "2022-12-25")]),  # day first: 25 is no month
    ("on Sunday, 7 May 2023", MAY7),
    ("on 7 May, 2023", MAY7),
    ("on May 7th, 2023", MAY7),
    ("on May the 7th", MAY7),
    ("on the seventh of May", MAY7),
    ("on Jan. 5", [("2023-01-05", "2023-01-05")]),
    ("on the 3rd", [("2023-08-03", "2023-08-03")]),    # this month's, it is past
    ("on the 28th", [("2023-07-28", "2023-07-28")]),   # not yet this month: last month's
    ("on the twenty-first", [("2023-08-21", "2023-08-21")]),
    # days counted back from the anchor
    ("3 days ago", [("2023-08-22", "2023-08-22")]),
    ("a few days ago", [("2023-08-22", "2023-08-22")]),
    ("last night", [("2023-08-24", "2023-08-24")]),
    ("this morning", [("2023-08-25", "2023-08-25")]),
    ("last Monday", [("2023-08-21", "2023-08-21")]),
    ("on Tuesday", [("2023-08-22", "2023-08-22")]),
    ("last Friday", [("2023-08-18", "2023-08-18")]),
    ("last Friday on 23 January, 2022", [("2022-01-23", "2022-01-23")]),
    # weeks
    ("last week", [("2023-08-14", "2023-08-20")]),
    ("the week before last", [("2023-08-07", "2023-08-13")]),
    ("the week before", [("2023-08-14", "2023-08-20")]),
    ("the week before 20 May 2023", [("2023-05-13", "2023-05-19")]),
    ("the past two weeks", [("2023-08-11", "2023-08-25")]),
    ("in the last 3 days", [("2023-08-22", "2023-08-25")]),
    ("a couple of weeks ago", [("2023-08-07", "2023-08-13")]),
    ("next week", [("2023-08-28", "2023-09-03")]),
    # months
    ("earlier this month", [("2023-08-01", "2023-08-25")]),
    ("later this month", [("2023-08-25", "2023-08-31")]),
    ("the month before last", [("2023-06-01", "2023-06-30")]),
    ("in early May", [("2023-05-01", "2023-05-10")]),
    ("in mid-June", [("2023-06-11", "2023-06-20")]),
    ("at the end of July", [("2023-07-21", "2023-07-31")]),
    ("in late March 2022", [("2022-03-21", "2022-03-31")]),
    ("over the past 3 months", [("2023-05-25", "2023-08-25")]),
    ("next month", [("2023-09-01", "2023-09-30")]),
    # seasons and years
    ("in the spring of 2022", [("2022-03-01", "2022-05-31")]),
    ("summer 2021", [("2021-06-01", "2021-08-31")]),
    ("during the fall", [("2022-09-01", "2022-11-30")]),
    ("last spring", [("2022-03-01", "2022-05-31")]),
    ("earlier this year", [("2023-01-01", "2023-08-25")]),
    ("two years ago", [("2021-01-01", "2021-12-31")]),
    # ranges
    ("between May and July", [("2023-05-01", "2023-07-31")]),
    ("from March to June 2022", [("2022-03-01", "2022-06-30")]),
    ("between 1 and 15 May", [("2023-05-01", "2023-05-15")]),
    ("from May 3 to May 9, 2023", [("2023-05-03", "2023-05-09")]),
    ("between 2020 and 2022", [("2020-01-01", "2022-12-31")]),
    # no time
    ("may I ask what she likes", []),
    ("the second time she went", []),
    ("she is the first of her family to study", []),
    ("a march for peace", []),
    ("rated 4/5", []),
]


@pytest.mark.parametrize(("query", "expected"), TABLE)
def test_forms(query: str, expected: list[tuple[str, str]]) -> None:
    assert _days(query) == sorted(expected)
