"""Helpers to run real worker OS processes in tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

FAST = {
    "BLACKBOARD_WORKER_HEARTBEAT_MS": "200",
    "BLACKBOARD_WORKER_LEASE_TTL_MS": "1000",
    "BLACKBOARD_WORKER_CLAIM_IDLE_MS": "1000",
    "BLACKBOARD_WORKER_TRIGGER_CHECK_MS": "100",
    "BLACKBOARD_WORKER_EDGES_REFRESH_MS": "300",
    "BLACKBOARD_WORKER_BLOCK_MS": "200",
}


class WorkerProcs:
    """Start, kill -9, and SIGTERM worker processes; all are reaped at teardown."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, role: str, **env: str) -> subprocess.Popen[bytes]:
        e = {**os.environ, **FAST, **env, "PYTHONUNBUFFERED": "1"}
        p = subprocess.Popen(
            [sys.executable, "-m", "cli", "worker", "--role", role, "--redis-url", self.url],
            env=e,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.procs.append(p)
        return p

    def kill(self, p: subprocess.Popen[bytes]) -> None:
        p.send_signal(signal.SIGKILL)
        p.wait()

    def terminate(self, p: subprocess.Popen[bytes], timeout: float = 20) -> int:
        p.send_signal(signal.SIGTERM)
        return p.wait(timeout)

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def wait_until(pred: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def stop_worker(p: subprocess.Popen[bytes], log: Path) -> str:
    """SIGTERM a worker process, which must exit 0 within 60 s; -> its log (killed if not)."""
    p.send_signal(signal.SIGTERM)
    try:
        code = p.wait(60)
    finally:
        if p.poll() is None:
            p.kill()
    text = log.read_text(errors="replace")
    assert code == 0, text[-3000:]
    return text
