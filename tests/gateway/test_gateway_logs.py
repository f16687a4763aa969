"""The gateway's logging (issue 24): one line per record, tracebacks only under debug,
formatted in the listener's thread, never on the event loop that logged; and the loopback
names an ``--insecure-local`` gateway answers to."""

from __future__ import annotations

import logging
import threading
from logging.handlers import QueueListener
from queue import SimpleQueue

from gateway import logs
from gateway.local_only import local_host, local_origin


def _record(exc: BaseException) -> logging.LogRecord:
    try:
        raise exc
    except type(exc):
        import sys

        return logging.LogRecord("gateway.errors", logging.ERROR, __file__, 1,
                                 "unexpected error on %s", ("/v1/tags",), sys.exc_info())


def test_an_error_is_one_line_and_the_traceback_only_under_debug() -> None:
    rec = _record(ValueError("bad\nvalue"))
    line = logs.OneLine(debug=False).format(rec)
    assert "\n" not in line and "Traceback" not in line
    assert line.endswith("gateway.errors: unexpected error on /v1/tags (ValueError: bad value)")
    assert "Traceback" in logs.OneLine(debug=True).format(rec)


def test_records_are_formatted_in_the_listeners_thread() -> None:
    where: list[str] = []

    class Spy(logs.OneLine):
        def format(self, record: logging.LogRecord) -> str:
            where.append(threading.current_thread().name)
            return super().format(record)

    q: SimpleQueue[logging.LogRecord] = SimpleQueue()
    out = logging.StreamHandler(open("/dev/null", "w"))  # noqa: SIM115 - closed below
    out.setFormatter(Spy())
    listener = QueueListener(q, out)
    listener.start()
    lg = logging.getLogger("test.gateway.logs")
    handler = logs._Deferred(q)
    lg.addHandler(handler)
    lg.propagate = False
    try:
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            lg.exception("failed %d", 1)
    finally:
        listener.stop()
        lg.removeHandler(handler)
        out.stream.close()
    assert where and threading.current_thread().name not in where


def test_uvicorns_second_report_of_a_logged_exception_is_dropped() -> None:
    exc = RuntimeError("x")
    rec = _record(exc)
    rec.msg = "Exception in ASGI application\n"
    assert logs._NotTwice().filter(rec)
    logs.mark_logged(rec.exc_info[1])  # type: ignore[index]
    assert not logs._NotTwice().filter(rec)


def test_loopback_names_only() -> None:
    for h in ("localhost", "localhost:8080", "127.0.0.1:1", "[::1]:80", "LOCALHOST"):
        assert local_host(h), h
    for h in ("evil.example", "127.0.0.1.evil.example", "localhost.evil:80", "127.0.0.2",
              "localhost:80/x", "[::1]x", ""):
        assert not local_host(h), h
    assert local_origin("http://localhost:3000") and local_origin("https://127.0.0.1")
    for o in ("null", "http://evil.example", "http://localhost.evil.example",
              "file://", "http://127.0.0.1@evil.example"):
        assert not local_origin(o), o
