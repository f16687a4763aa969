"""Every failure of the ``blackboard`` command as one line on stderr and an exit code.

Exit codes (documented in the README, "Command line"):

====  ===========================================================================
0     done
1     runtime: Redis unreachable, nothing found, a server that would not start
2     usage: a bad option value, URL, scope, lens or level (nothing was changed)
3     ``check`` found drift it did not repair
4     permission: Redis refused the login or an agent user's command (ACL)
====  ===========================================================================

A traceback is printed only with ``--debug`` or ``BLACKBOARD_DEBUG=1``. Messages go
through :func:`blackboard.redact.redact`, so a password in a URL never reaches the terminal.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any, NoReturn

import typer
from rich.markup import escape

from blackboard import AccessDenied, BlackboardError, InvalidArgument, NotFound, ServerUnavailable
from blackboard.errors import LoginRefused
from blackboard.redact import redact

from .output import err_console

__all__ = [
    "EXIT_DRIFT",
    "EXIT_PERMISSION",
    "EXIT_RUNTIME",
    "EXIT_USAGE",
    "debug_enabled",
    "describe",
    "fail",
    "one_line_warnings",
    "usage",
]

EXIT_RUNTIME, EXIT_USAGE, EXIT_DRIFT, EXIT_PERMISSION = 1, 2, 3, 4

_ACL_HINT = ("an agent's Redis user may touch only its own scopes, its teams' and "
             "collective (stats and other agents' memory need the service or an admin user)")


def debug_enabled() -> bool:
    return os.environ.get("BLACKBOARD_DEBUG", "").lower() in ("1", "true", "yes", "on")


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and e not in out:
        out.append(e)
        e = e.__cause__ or e.__context__
    return out


def _first_line(text: str) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), text.strip())
    return line.rstrip(".")


def _denied(msg: str) -> str:
    """``COMMAND key`` out of redis-py's pipeline message, else the message's gist."""
    m = re.search(r"\(([A-Z][A-Z|]*) ([^\s)]+)", msg)
    if m:
        return f"{m.group(1)} on {m.group(2)}"
    return _first_line(msg).removeprefix("this user has no permissions to ")


def _said(e: BaseException) -> str | None:
    """Redis's own words when ``e`` is one of its errors the library handed over."""
    return e.redis_message if isinstance(e, BlackboardError) else None


def _unreachable(e: BaseException) -> bool:
    """Redis's connection or timeout error as it came (not the library's "cannot reach
    Redis at ..." when connecting, not a refused login)."""
    return (isinstance(e, ServerUnavailable) and not isinstance(e, LoginRefused)
            and _said(e) is not None)


def _refused_by_redis(e: BaseException) -> str | None:
    """The line for Redis's own refusal of the login or of a command (NOPERM), if ``e`` is
    one; an ACL failure inside a script (7.0's words) keeps the library's line."""
    said = _said(e)
    if said is None:
        return None
    if isinstance(e, LoginRefused):
        return (f"Redis refused the login ({_first_line(said).rstrip('.')}): check the "
                "user name and password in --redis-url / BLACKBOARD_REDIS_URL")
    if isinstance(e, AccessDenied) and "ACL failure in script" not in said:
        return f"Redis denied {_denied(said)} to this user: {_ACL_HINT}"
    return None


def describe(exc: BaseException) -> tuple[int, str]:
    """``(exit code, one line naming the problem and the fix)`` for ``exc``."""
    chain = _chain(exc)
    for e in chain:
        if (line := _refused_by_redis(e)) is not None:
            return EXIT_PERMISSION, line
    if isinstance(exc, AccessDenied):
        return EXIT_PERMISSION, f"{_first_line(str(exc))}; {_ACL_HINT}"
    if isinstance(exc, InvalidArgument):
        return EXIT_USAGE, _first_line(str(exc))
    if isinstance(exc, NotFound):
        return EXIT_RUNTIME, _first_line(str(exc))
    if _unreachable(exc):
        return _cannot_reach(exc)
    if isinstance(exc, ServerUnavailable):
        return EXIT_RUNTIME, (f"{_first_line(str(exc))}; is it running? "
                              "(`blackboard server` starts one)")
    if isinstance(exc, BlackboardError):
        return EXIT_RUNTIME, _first_line(str(exc))
    if type(exc).__name__ == "ValidationError":  # pydantic: a query field was rejected
        errs: list[dict[str, Any]] = getattr(exc, "errors", list)()
        msg = errs[0].get("msg", str(exc)) if errs else str(exc)
        return EXIT_USAGE, _first_line(str(msg).removeprefix("Value error, "))
    for e in chain:
        if _unreachable(e):
            return _cannot_reach(e)
    if isinstance(exc, ValueError) and "Redis URL" in str(exc):
        return EXIT_USAGE, f"bad Redis URL: {_first_line(str(exc))}"
    if isinstance(exc, PermissionError):
        return EXIT_PERMISSION, f"{_first_line(str(exc))} (check the file's owner and mode)"
    if isinstance(exc, OSError):
        return EXIT_RUNTIME, _first_line(str(exc))
    return EXIT_RUNTIME, (f"unexpected {type(exc).__name__}: {_first_line(str(exc))} "
                          "(rerun with --debug for the traceback)")


def _cannot_reach(e: BaseException) -> tuple[int, str]:
    return EXIT_RUNTIME, (f"cannot reach Redis ({_first_line(str(e))}); "
                          "is it running? `blackboard server` starts one")


def one_line_warnings() -> None:
    """Python warnings (e.g. Redis running without AOF) as one line each on stderr."""
    import warnings

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        err_console.print(f"[yellow]warning:[/] {escape(redact(str(message)))}",
                          highlight=False, soft_wrap=True)

    if not debug_enabled():
        warnings.showwarning = show


def _say(kind: str, line: str, code: int, as_json: bool) -> NoReturn:
    if as_json:  # for a program that launched us and reads our stderr
        print(json.dumps({"error": kind, "detail": redact(line), "exit": code}),
              file=sys.stderr, flush=True)
    else:
        err_console.print(f"[red]error:[/] {escape(redact(line))}", highlight=False,
                          soft_wrap=True)
    raise typer.Exit(code) from None


def fail(exc: BaseException, *, as_json: bool = False) -> NoReturn:
    """Print ``exc`` as one line (``as_json``: one JSON object ``{error, detail, exit}``)
    on stderr and exit with its code (re-raise under ``--debug``)."""
    if debug_enabled():
        raise exc
    code, line = describe(exc)
    _say(type(exc).__name__, line, code, as_json)


def usage(message: str, *, as_json: bool = False) -> NoReturn:
    """A usage mistake found by the command itself: one line, exit 2."""
    _say("usage", message, EXIT_USAGE, as_json)
