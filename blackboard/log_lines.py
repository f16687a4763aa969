"""One line per log record, the traceback only when debugging: the format every process of
the project writes its logs in (workers here, the gateway through :mod:`gateway.logs`).

A failure that repeats (Redis restarting, a failover, a revoked password) is logged each
time it is met; a full traceback each time turns a short outage into a storm that hides
the one line that matters. An error is therefore its message, then the exception's type
and text, on one line; ``BLACKBOARD_DEBUG=1`` (``blackboard --debug ...``) adds the
traceback.
"""

from __future__ import annotations

import logging
import os
import sys

__all__ = ["OneLine", "debug_enabled", "install_one_line"]


def debug_enabled() -> bool:
    return os.environ.get("BLACKBOARD_DEBUG", "").lower() in ("1", "true", "yes", "on")


class OneLine(logging.Formatter):
    """``<time> <LEVEL> <logger>: <message> (<ExcType>: <text>)`` on one line; with
    ``debug`` the traceback follows on its own lines."""

    def __init__(self, debug: bool = False) -> None:
        super().__init__()
        self.debug = debug

    def format(self, record: logging.LogRecord) -> str:
        line = f"{self.formatTime(record)} {record.levelname} {record.name}: " \
               f"{record.getMessage()}"
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None:
            line += f" ({type(exc).__name__}: {exc})"
        line = " ".join(line.split())[:2000]
        if exc is not None and self.debug and record.exc_info:
            return line + "\n" + self.formatException(record.exc_info)
        return line


def install_one_line(debug: bool | None = None) -> None:
    """This process's root logger writes :class:`OneLine` records to stderr (WARNING and
    up; INFO and up when debugging)."""
    dbg = debug_enabled() if debug is None else debug
    out = logging.StreamHandler(sys.stderr)
    out.setFormatter(OneLine(dbg))
    root = logging.getLogger()
    root.handlers = [out]
    root.setLevel(logging.INFO if dbg else logging.WARNING)
