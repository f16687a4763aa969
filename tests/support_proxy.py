"""A TCP proxy in front of Redis that loses one reply on cue: what a connection dying
between Redis running a command and its reply arriving looks like to the client (a
``CLIENT KILL`` or a network fault at the worst moment). Real sockets, a real server, the
client in another process: only the one reply is taken away.

Armed with a command name, the proxy closes the client's connection instead of passing on
the first reply to that command which carries data (not a null: a blocking read that timed
out), on a connection whose last command sent was that one.
"""

from __future__ import annotations

import asyncio
import re
import threading
from contextlib import suppress

__all__ = ["ReplyLosingProxy"]

#: The name of each command in a chunk the client sent (RESP arrays of bulk strings).
COMMAND = re.compile(rb"\*\d+\r\n\$\d+\r\n([A-Za-z]+)\r\n")
#: Replies that carry nothing: RESP2 null array and bulk, RESP3 null, an error.
EMPTY = (b"*-1\r\n", b"$-1\r\n", b"_\r\n", b"-")


class ReplyLosingProxy:
    """``127.0.0.1:<port>`` forwarding to ``127.0.0.1:<target_port>``, on a thread of its own."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.lost = threading.Event()
        self._armed: bytes | None = None
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.base_events.Server | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="proxy", daemon=True)

    def __enter__(self) -> ReplyLosingProxy:
        self._thread.start()
        self._started.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def arm(self, command: str) -> None:
        """Lose the next data-carrying reply to ``command``."""
        self.lost.clear()
        self._armed = command.upper().encode()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            self._server = await asyncio.start_server(self._client, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]
            self._started.set()

        self._loop.run_until_complete(start())
        self._loop.run_forever()

    async def _client(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        sr, sw = await asyncio.open_connection("127.0.0.1", self.target_port)
        last: list[bytes] = [b""]

        async def upstream() -> None:
            while data := await cr.read(65536):
                names = COMMAND.findall(data)
                if names:
                    last[0] = names[-1].upper()
                sw.write(data)
                await sw.drain()

        async def downstream() -> None:
            while data := await sr.read(65536):
                if (self._armed is not None and last[0] == self._armed
                        and not data.startswith(EMPTY)):
                    self._armed = None
                    self.lost.set()
                    return  # the reply is dropped with the connection
                cw.write(data)
                await cw.drain()

        tasks = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
        with suppress(Exception):
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for t in tasks:
            t.cancel()
        for w in (cw, sw):
            with suppress(Exception):
                w.close()
