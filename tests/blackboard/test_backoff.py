"""Backoff of the feed readers (issue 24): doubling waits up to a cap, one log line per
streak of failures."""

from __future__ import annotations

from blackboard.backoff import Backoff


def test_waits_double_to_the_cap_and_start_over_after_a_success() -> None:
    b = Backoff(first=0.5, cap=4.0)
    waits = [b.next_delay() for _ in range(6)]
    for got, top in zip(waits, [0.5, 1, 2, 4, 4, 4], strict=True):
        assert 0.8 * top <= got <= top
    assert b.failures == 6 and not b.first_failure
    b.reset()
    assert b.next_delay() <= 0.5 and b.first_failure
    many = Backoff()
    for _ in range(200):  # no overflow however long it fails
        assert many.next_delay() <= 30.0
