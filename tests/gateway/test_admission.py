"""When a read may run before its rate bucket answers (:mod:`gateway.admission`; pure)."""

from __future__ import annotations

from gateway.admission import Admission


def test_a_user_runs_ahead_no_further_than_its_last_answer_allowed() -> None:
    a = Admission()
    assert not a.may_run_ahead("u")  # never answered: its first read waits
    a.answered("u", 3)
    assert [a.may_run_ahead("u") for _ in range(4)] == [True, True, True, False]
    assert a.ahead("u") == 3
    a.answered("u", 2, ahead=True)  # one of them answered: 2 left, 2 still ahead
    assert not a.may_run_ahead("u") and a.ahead("u") == 2
    a.answered("u", 0, ahead=True)  # refused: nothing runs ahead any more
    a.answered("u", 0, ahead=True)
    assert a.ahead("u") == 0 and not a.may_run_ahead("u")
    a.answered("u", 5)  # a read that waited found the bucket refilled
    assert a.may_run_ahead("u")


def test_users_are_apart_and_the_oldest_forgotten() -> None:
    a = Admission(max_principals=2)
    a.answered("u", 9)
    a.answered("v", 0)
    assert a.may_run_ahead("u") and not a.may_run_ahead("v")
    a.answered("w", 9)  # u was seen last before w: v is the oldest
    assert a.ahead("v") == 0 and a.may_run_ahead("u") and a.may_run_ahead("w")
    a.answered("x", 9)  # now u is the oldest: forgotten, its next read waits
    assert not a.may_run_ahead("u")
    a.answered("u", 1, ahead=True)  # an answer for a forgotten read counts nothing ahead
    assert a.ahead("u") == 0
