"""``blackboard worker --concurrency N``: N worker processes, signals forwarded, reaped."""

from __future__ import annotations

import signal
import subprocess
import sys

__all__ = ["run_processes", "worker_command"]


def worker_command(url: str, role: str, metrics_port: int | None = None) -> list[str]:
    """The command line of one worker process (this interpreter, this package)."""
    cmd = [sys.executable, "-m", "workers", "worker", "--role", role, "--redis-url", url]
    if metrics_port is not None:
        cmd += ["--metrics-port", str(metrics_port)]
    return cmd


def run_processes(url: str, role: str, n: int, metrics_port: int | None = None) -> int:
    """Start ``n`` workers, forward SIGTERM/SIGINT to them, wait; the worst exit code."""
    procs = [
        subprocess.Popen(
            worker_command(url, role, None if metrics_port is None else metrics_port + i)
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
