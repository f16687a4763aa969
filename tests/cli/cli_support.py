"""Running the ``blackboard`` command as a user does (a real process) and judging its
stderr the way issue 16 asks: one line per mistake, no traceback, no password."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

SECRET = "s3cr3t-pw-16"


@dataclass
class Run:
    code: int
    out: str
    err: str

    def one_line_error(self, code: int) -> str:
        """Assert the mistake contract; the error line."""
        lines = [ln for ln in self.err.splitlines() if ln.strip()]
        assert self.code == code, (self.code, self.out[-1500:], self.err[-1500:])
        assert 1 <= len(lines) <= 2, self.err
        assert "Traceback" not in self.err and "Traceback" not in self.out
        assert SECRET not in self.err and SECRET not in self.out
        return lines[-1]


def cli(*args: str, url: str | None = None, timeout: float = 60, columns: int = 80,
        **env: str) -> Run:
    e = {k: v for k, v in os.environ.items()
         if k not in ("BLACKBOARD_REDIS_URL", "BLACKBOARD_DEBUG")}
    e.update(env, COLUMNS=str(columns), PYTHONUNBUFFERED="1")
    if url is not None:
        e["BLACKBOARD_REDIS_URL"] = url
    r = subprocess.run([sys.executable, "-m", "cli", *args], env=e, capture_output=True,
                       text=True, timeout=timeout, check=False)
    return Run(r.returncode, r.stdout, r.stderr)
