"""bench/consolidation_quality.py as its users run it: on a tiny LoCoMo-format file (one
conversation, two sessions of ten turns, gold summaries and observations) it prints every
figure and exits 0; a path that is not there is a one-line error and exit 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bench.consolidation_quality import main
from tests.bench.bench_support import TINY, run_bench


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return run_bench("consolidation_quality.py", *args)


@pytest.mark.process  # the bench, and the redis-server it embeds
def test_tiny_file_end_to_end_prints_the_figures() -> None:
    r = _bench("--data", str(TINY))
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout
    assert "state: settled" in out
    for what in ("ROUGE-L F1 0.", "cosine 0.", "strict (both) 0.", "overall", "R@10"):
        assert what in out, (what, out)
    assert all(len(line) <= 80 for line in out.splitlines()), out
    assert "session round 2/2" in r.stderr  # progress on stderr


@pytest.mark.process
def test_json_without_gold_annotations_says_n_a(tmp_path: Path) -> None:
    sample = json.loads(TINY.read_text())[0]
    del sample["session_summary"], sample["observation"]
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps([sample]))
    r = _bench("--data", str(bare), "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout)
    assert got["summaries"]["rouge_l"] is None and got["observations"]["strict"] is None
    assert got["long_term_recall"]["overall"]["questions"] == 8


def test_bad_path_is_one_line_and_exit_2(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--data", str(tmp_path / "missing.json")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "missing.json" in err
