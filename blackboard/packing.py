"""Command packing in C for the asyncio client.

redis-py packs commands with hiredis's C packer on its blocking connections only; its
asyncio connections pack in Python, and the cost grows with the argument count (a
worker's ``buffer.lua`` call for 200 events has ~800 arguments: 450 us in Python, 53 us
in C). :func:`with_fast_packing` derives a connection class that packs with
``hiredis.pack_command`` and falls back to redis-py's packer for what hiredis refuses
(bool, None, bytearray: redis-py then raises its usual ``DataError`` or converts).
"""

from __future__ import annotations

from functools import cache
from typing import Any

__all__ = ["pack", "with_fast_packing"]


@cache
def with_fast_packing(connection_class: type[Any]) -> type[Any]:
    """``connection_class`` packing with hiredis when it is installed (unchanged if not)."""
    try:
        import hiredis
    except ImportError:  # the [hiredis] extra is a dependency; a bare install still works
        return connection_class
    pack = hiredis.pack_command

    def pack_command(self: Any, *args: Any) -> list[bytes]:
        # Multi-word command names ('CONFIG GET') are split as redis-py does.
        if isinstance(args[0], str) and " " in args[0]:
            args = (*args[0].encode().split(), *args[1:])
        elif isinstance(args[0], bytes) and b" " in args[0]:
            args = (*args[0].split(), *args[1:])
        try:
            return [pack(args)]
        except TypeError:
            return connection_class.pack_command(self, *args)

    return type(
        f"FastPacking{connection_class.__name__}",
        (connection_class,),
        {"pack_command": pack_command, "__doc__": connection_class.__doc__},
    )


def pack(*args: str | bytes | int) -> bytes:
    """One command as RESP bytes, for a caller that writes it itself (text as UTF-8)."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)
