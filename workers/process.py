"""A worker process: the roles it runs sharing one connection, registry client, lease clock
and metrics endpoint, until SIGTERM or SIGINT; a stop that hangs says what it waits on.

A stop is bounded: the roles get ``STOP_BUDGET_S`` to finish what they hold and give their
leases back; past it what they still hold is abandoned (un-acked events are re-delivered
to the next owner, leases lapse), and ``EXIT_AFTER_S`` after the signal the process exits
0 whatever still runs (a thread in the model, a client call that swallowed its
cancellation), saying so in one log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from blackboard import Blackboard
from blackboard.errors import OutOfMemory
from blackboard.log_lines import install_one_line
from memory.registry import Registry

from .leases import LeaseTable, TableClock
from .metrics import MetricsServer, render_process, render_progress
from .oom import OomNotice
from .roles import ROLES, role_spec
from .settings import WorkerSettings
from .worker import Worker

__all__ = ["run_worker"]

log = logging.getLogger(__name__)


#: A worker started while Redis is over its maxmemory tries its first writes this often.
START_RETRY_S = 1.0
#: A stop still running after this long logs where every task waits (and again as often).
STOP_REPORT_AFTER_S = 5.0
#: The roles' stop is abandoned after this long ...
STOP_BUDGET_S = 7.0
#: ... and the process exits 0 this long after the signal, whatever still runs.
EXIT_AFTER_S = 9.5


def _exit_after(seconds: float) -> threading.Timer:
    """A timer that ends the process (exit 0) if it is still running ``seconds`` from now."""

    def hard_exit() -> None:
        log.error("still running %.1fs after the stop signal; exiting now (un-acked events "
                  "are re-delivered, leases lapse)", seconds)
        logging.shutdown()
        sys.stderr.flush()
        os._exit(0)

    timer = threading.Timer(seconds, hard_exit)
    timer.daemon = True
    timer.start()
    return timer


async def _report_slow_stop(after_s: float) -> None:
    """Log what a slow stop waits on, every ``after_s``: a hang names itself in the log."""
    me = asyncio.current_task()
    while True:
        await asyncio.sleep(after_s)
        lines = [f"  {t.get_name()}: {_awaiting(t.get_coro())}"
                 for t in asyncio.all_tasks() if t is not me]
        log.warning("still stopping after %.0fs; waiting on:\n%s", after_s, "\n".join(lines))


def _awaiting(coro: Any) -> str:
    """``outer:line -> inner:line …``: the chain of awaits a coroutine is suspended in."""
    hops: list[str] = []
    while coro is not None and len(hops) < 12:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "ag_frame", None)
        if frame is None:
            hops.append(type(coro).__name__)
            break
        hops.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None)
    return " -> ".join(hops) or "not started"


async def _serve(url: str, role: str, settings: WorkerSettings, ready: Callable[[], None]) -> None:
    async with Blackboard.connect(url) as bb:
        roles = list(ROLES) if role == "all" else [role]
        # One registry client, one lease-table clock and one metrics endpoint per process.
        registry = Registry(bb)
        clock = TableClock(LeaseTable(bb), settings.heartbeat_ms)
        workers = [Worker(bb, r, settings, registry=registry, clock=clock) for r in roles]
        metrics = None
        if settings.metrics_port is not None:
            metrics = MetricsServer(
                settings.metrics_port,
                lambda: render_process([(w.role, w.id, w.counters()) for w in workers])
                + render_progress([(w.role, w.id, w.progress.ages_ms()) for w in workers
                                   if w.holds_leases]),
                host=settings.metrics_host,
            )
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()

        def on_signal() -> None:
            if not stop.is_set():
                stop.set()
                _exit_after(EXIT_AFTER_S)

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal)
        try:
            if metrics is not None:
                await metrics.start()
            for w in workers:
                if not await _when_writable(w, stop):
                    return  # stopped while waiting for memory: nothing started
                await w.start()
            ready()
            await stop.wait()
        finally:
            watchdog = asyncio.create_task(_report_slow_stop(STOP_REPORT_AFTER_S))
            stopping = asyncio.ensure_future(
                asyncio.gather(*(w.stop() for w in workers), return_exceptions=True))
            done, _ = await asyncio.wait({stopping}, timeout=STOP_BUDGET_S)
            if not done:
                log.error("the roles did not stop within %.0fs; abandoning what they hold "
                          "(un-acked events are re-delivered, leases lapse)", STOP_BUDGET_S)
            watchdog.cancel()
            if metrics is not None:
                await metrics.stop()
            await registry.aclose()


async def _when_writable(w: Worker, stop: asyncio.Event) -> bool:
    """Announce ``w``, waiting while Redis is over its maxmemory (saying so, one line per
    ``oom_say_every_s``); False when told to stop meanwhile."""
    notice = OomNotice(f"worker {w.role}", w.settings.oom_say_every_s)
    while not stop.is_set():
        try:
            await w.announce()
            return True
        except OutOfMemory:
            notice.say("waiting for memory to be freed before starting (SIGTERM stops it)")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), START_RETRY_S)
    return False


def run_worker(
    url: str,
    role: str,
    settings: WorkerSettings | None = None,
    ready: Callable[[], None] = lambda: None,
) -> int:
    """Run ``role`` (or ``all``) in this process until SIGTERM/SIGINT; exit code 0."""
    if role != "all":
        role_spec(role)  # ValueError naming the roles, before anything starts
    install_one_line()  # an outage met again and again is one line each, not a traceback
    settings = settings or WorkerSettings.from_env()
    yield_cpu(settings.nice)
    asyncio.run(_serve(url, role, settings, ready))
    return 0


def yield_cpu(nice: int) -> None:
    """Run this process at niceness ``nice`` (at least): before any thread starts, since on
    Linux a thread's niceness is its own and new threads (the model's among them) inherit
    their creator's. Lowering one's own priority needs no privilege."""
    if not nice or not hasattr(os, "setpriority"):
        return
    with contextlib.suppress(OSError):
        if os.getpriority(os.PRIO_PROCESS, 0) < nice:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
