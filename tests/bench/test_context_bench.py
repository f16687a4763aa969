"""bench/context.py as its users run it: on a tiny LoCoMo-format file it prints the curve
over the budgets asked, every context within its budget, and exits 0; a bad path or
conversation number is a one-line error and exit 2."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.bench.bench_support import TINY, run_bench


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return run_bench("context.py", *args)


@pytest.mark.process  # the bench, and the redis-server it embeds
def test_tiny_file_gives_the_curve_within_budget() -> None:
    r = _bench("--data", str(TINY), "--budgets", "60,400", "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout)
    assert got["state"] == "settled" and got["questions"] > 0
    assert set(got["budgets"]) == {"60", "400"}
    assert all(x["within_budget"] == 1.0 for x in got["budgets"].values())
    assert got["budgets"]["400"]["evidence_cited"] >= got["budgets"]["60"]["evidence_cited"]
    text = _bench("--data", str(TINY), "--budgets", "400")
    assert all(len(line) <= 80 for line in text.stdout.splitlines()), text.stdout


@pytest.mark.process
@pytest.mark.parametrize("args", [("--data", "/nonexistent.json"), ("--conversations", "9")])
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...]) -> None:
    r = _bench(*args)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("bench/context.py: ")
