"""Time expressions in queries, resolved against the memory's timeline (a table)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from retrieval.timeline import resolve_periods

# the anchor: the newest moment of the memory (a Friday)
ANCHOR = int(datetime(2023, 8, 25, 15, 0, tzinfo=UTC).timestamp() * 1000)


def _days(query: str) -> list[tuple[str, str]]:
    def d(ms: int) -> str:
        return datetime.fromtimestamp(ms / 1000, UTC).date().isoformat()

    return [(d(a), d(b)) for a, b in resolve_periods(query, ANCHOR)]


TABLE = [
    ("What did Melanie do in May 2023?", [("2023-05-01", "2023-05-31")]),
    ("what happened on 7 May 2023", [("2023-05-07", "2023-05-07")]),
    ("what happened on May 7, 2023", [("2023-05-07", "2023-05-07")]),
    ("what happened on the 7th of May", [("2023-05-07", "2023-05-07")]),
    ("the party on 2023-05-08", [("2023-05-08", "2023-05-08")]),
    ("her trip in May", [("2023-05-01", "2023-05-31")]),
    ("plans in September", [("2022-09-01", "2022-09-30")]),  # a month after the anchor: last year's
    ("on Dec 24", [("2022-12-24", "2022-12-24")]),
    ("what did she buy in 2022", [("2022-01-01", "2022-12-31")]),
    ("what did Melanie do last summer", [("2022-06-01", "2022-08-31")]),
    ("this summer", [("2023-06-01", "2023-08-31")]),
    ("in the winter of 2022", [("2022-12-01", "2023-02-28")]),
    ("yesterday", [("2023-08-24", "2023-08-24")]),
    ("today", [("2023-08-25", "2023-08-25")]),
    ("the day before yesterday", [("2023-08-23", "2023-08-23")]),
    ("last week", [("2023-08-14", "2023-08-20")]),
    ("this week", [("2023-08-21", "2023-08-27")]),
    ("last weekend", [("2023-08-19", "2023-08-20")]),
    ("last month", [("2023-07-01", "2023-07-31")]),
    ("last year", [("2022-01-01", "2022-12-31")]),
    ("two weeks ago", [("2023-08-07", "2023-08-13")]),
    ("3 days ago", [("2023-08-22", "2023-08-22")]),
    ("a month ago", [("2023-07-01", "2023-07-31")]),
    ("from May 2023 to last month", [("2023-05-01", "2023-05-31"),
                                      ("2023-07-01", "2023-07-31")]),
    # no time: modal "may", "fall" and "spring" as words, a bare number
    ("When did Caroline go to the support group?", []),
    ("what may she do next", []),
    ("did he fall off the bike", []),
    ("she has 2 dogs", []),
]


@pytest.mark.parametrize(("query", "expected"), TABLE)
def test_expression_table(query: str, expected: list[tuple[str, str]]) -> None:
    assert sorted(_days(query)) == sorted(expected)


def test_periods_are_inclusive_ms_and_deterministic() -> None:
    (a, b), = resolve_periods("yesterday", ANCHOR)
    assert b - a == 86_400_000 - 1
    assert resolve_periods("in May 2023 and last week", ANCHOR) == resolve_periods(
        "in May 2023 and last week", ANCHOR)


def test_january_anchor_rolls_back_a_year() -> None:
    jan = int(datetime(2024, 1, 10, tzinfo=UTC).timestamp() * 1000)
    (a, _), = resolve_periods("last month", jan)
    assert datetime.fromtimestamp(a / 1000, UTC).date().isoformat() == "2023-12-01"


def test_periods_come_in_a_fixed_order_of_expression_kinds() -> None:
    # each kind of expression is resolved in turn (dates, months, seasons, years, days back,
    # "ago", "last ..."), not in the order the query says them
    assert _days("last week, yesterday, two days ago, in 2021, last summer, in March, "
                 "Feb 2023, on 3 June and 2023-01-02") == [
        ("2023-01-02", "2023-01-02"), ("2023-06-03", "2023-06-03"),
        ("2023-02-01", "2023-02-28"), ("2023-03-01", "2023-03-31"),
        ("2022-06-01", "2022-08-31"), ("2021-01-01", "2021-12-31"),
        ("2023-08-24", "2023-08-24"), ("2023-08-23", "2023-08-23"),
        ("2023-08-14", "2023-08-20"),
    ]


def test_an_impossible_date_names_nothing_and_hides_its_month() -> None:
    assert _days("on 31 February 2023") == []
    assert _days("2023-02-30 or 2023-13-01") == []
    assert _days("on February 29") == []  # 2023 has none: the anchor's year is kept
