"""Running a bench script as its users do: ``python bench/<script> ...`` from the
repository's root, with the tiny LoCoMo-format file the bench tests share."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TINY = Path(__file__).with_name("locomo_tiny.json")


def run_bench(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, f"bench/{script}", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=240, check=False)
