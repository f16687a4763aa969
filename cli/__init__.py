"""The ``blackboard`` command: every subcommand, the demo and terminal output.

The top of the house: it drives :mod:`workers` and :mod:`gateway` (and everything below
them); nothing imports it. :func:`main` is the command's entry point (``blackboard``,
``python -m cli``). Before anything imports numpy it caps native thread pools (OpenBLAS,
OpenMP, MKL) at one thread unless the environment sets them: worker processes are the
unit of parallelism, and an idle BLAS pool spin-waits on the CPU that the other workers
and Redis need. Measured on 2 vCPUs: a summarize worker burnt 1.6 CPUs for the throughput
of one, and two workers were slower together than one alone.
"""

from __future__ import annotations

import os
import signal
from types import FrameType

__all__ = ["NATIVE_THREAD_VARS", "cap_native_threads", "main"]

#: Environment variables that size native thread pools when a library loads.
NATIVE_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def cap_native_threads() -> None:
    """One native thread per pool unless the environment says otherwise. Only effective
    before numpy (or faiss, onnxruntime) is first imported in this process."""
    for var in NATIVE_THREAD_VARS:
        os.environ.setdefault(var, "1")


def _exit_on_term(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main() -> None:
    """The ``blackboard`` command."""
    cap_native_threads()
    # Until a command installs its own handling (a worker does before it takes a lease),
    # SIGTERM means "stop before starting": nothing is held yet, so exit 0 at once rather
    # than die by the signal, which supervisors (and the crash test) read as a failure.
    signal.signal(signal.SIGTERM, _exit_on_term)
    from .app import main as app_main

    app_main()
