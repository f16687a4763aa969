"""Issue 23 item 2 on the command line: Redis over its maxmemory is one line, exit 1."""

from __future__ import annotations

from redis import exceptions as rexc

from blackboard.errors import OutOfMemory
from blackboard.redis_errors import translate
from cli.errors import EXIT_RUNTIME, describe


def test_out_of_memory_is_one_line_naming_the_fix() -> None:
    exc = translate(rexc.OutOfMemoryError(  # type: ignore[attr-defined]
        "command not allowed when used memory > 'maxmemory'."))
    assert isinstance(exc, OutOfMemory)
    code, line = describe(exc)
    assert code == EXIT_RUNTIME
    assert "\n" not in line and "maxmemory" in line and "nothing was written" in line
