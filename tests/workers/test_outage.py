"""A worker's lease loop while Redis is unreachable: one line when it starts, at most one
per interval while it lasts, one when Redis answers again (workers/outage.py)."""

from __future__ import annotations

import logging

import pytest

from blackboard import ServerUnavailable
from workers.outage import OutageNotice


def test_an_outage_is_a_line_then_one_per_interval_then_one_at_the_end(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr("workers.outage.time.monotonic", lambda: now[0])
    n = OutageNotice("worker w1 heartbeats and leases", every_s=30)
    with caplog.at_level(logging.INFO, logger="workers"):
        n.recovered()  # no outage: nothing to say
        for _ in range(60):  # a tick a second for a minute
            n.failed(ServerUnavailable("Error 111 connecting to 127.0.0.1:6379"))
            now[0] += 1
        n.recovered()
        n.recovered()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines
    assert "unreachable for 0 s (Error 111" in lines[0]
    assert "unreachable for 30 s" in lines[1]
    assert lines[2].endswith("Redis answers again after 60 s")
    assert not any(r.exc_info for r in caplog.records)  # never a traceback
