"""The gateway process's logging: one line per record, written off the event loop.

A gateway serves every caller on one event loop, so whatever a log call costs there, every
caller waits for. A traceback is the costly part: the MCP SDK puts rich's highlighted
tracebacks on the root logger (seconds each), and uvicorn logs one more per failed
request. :func:`install` (run before the app is built, so the SDK's ``basicConfig`` finds
a handler and adds none) routes every record -- ours, uvicorn's, the SDK's -- through a
queue to a thread that formats and writes it. An error is one line (its message, then the
exception's type and text); the traceback is kept only with ``BLACKBOARD_DEBUG=1``
(``blackboard --debug gateway``), and even then rendered by that thread.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import queue
import sys
from logging.handlers import QueueHandler, QueueListener

from blackboard.log_lines import OneLine, debug_enabled

__all__ = ["OneLine", "debug_enabled", "install", "mark_logged"]

#: uvicorn's line for an exception that left the app (after our handler answered it).
_UVICORN_ASGI = "Exception in ASGI application"
_LOGGED = "_blackboard_logged"
_listener: QueueListener | None = None


class _Deferred(QueueHandler):
    """Hands the record over as it is: formatting (the traceback above all) happens in the
    listener's thread, not on the loop that logged it."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        record.msg, record.args = record.getMessage(), None
        return record


class _NotTwice(logging.Filter):
    """Drops uvicorn's report of an exception the gateway's handler already logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (str(record.msg).startswith(_UVICORN_ASGI) and exc is not None
                    and getattr(exc, _LOGGED, False))


def mark_logged(exc: BaseException) -> None:
    """Note that ``exc`` was logged (uvicorn's own report of it is then dropped)."""
    # An exception type with __slots__ cannot be marked: logged twice, harmlessly.
    with contextlib.suppress(AttributeError):
        setattr(exc, _LOGGED, True)


def install(debug: bool | None = None) -> None:
    """Route every log record of the process through the one-line, off-loop writer
    (once per process; later calls do nothing)."""
    global _listener
    if _listener is not None:
        return
    dbg = debug_enabled() if debug is None else debug
    q: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    out = logging.StreamHandler(sys.stderr)
    out.setFormatter(OneLine(dbg))
    _listener = QueueListener(q, out)
    _listener.start()
    atexit.register(_listener.stop)
    root = logging.getLogger()
    root.handlers = [_Deferred(q)]
    root.setLevel(logging.INFO if dbg else logging.WARNING)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi"):
        lg = logging.getLogger(name)
        lg.handlers = []
        lg.propagate = True
    logging.getLogger("uvicorn.error").addFilter(_NotTwice())
