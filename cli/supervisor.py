"""``blackboard worker --concurrency N``: N worker processes, signals forwarded, reaped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

__all__ = ["run_processes", "worker_command", "worker_env"]


def worker_command(role: str, metrics_port: int | None = None) -> list[str]:
    """The command line of one worker process (this interpreter, this package). The Redis
    URL goes in the environment (:func:`worker_env`): ``ps`` shows argv to every user, and
    the URL may carry a password."""
    cmd = [sys.executable, "-m", "cli", "worker", "--role", role]
    if metrics_port is not None:
        cmd += ["--metrics-port", str(metrics_port)]
    return cmd


def worker_env(url: str) -> dict[str, str]:
    """This process's environment with ``BLACKBOARD_REDIS_URL`` set to ``url``."""
    return {**os.environ, "BLACKBOARD_REDIS_URL": url}


def run_processes(url: str, role: str, n: int, metrics_port: int | None = None) -> int:
    """Start ``n`` workers, forward SIGTERM/SIGINT to them, wait; the worst exit code."""
    procs = [
        subprocess.Popen(
            worker_command(role, None if metrics_port is None else metrics_port + i),
            env=worker_env(url),
        )
        for i in range(n)
    ]

    def forward(signum: int, frame: object) -> None:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    codes = [p.wait() for p in procs]
    return max((abs(c) for c in codes), default=0)
