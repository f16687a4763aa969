"""A socket of one's own beside the pool, for a question on every request's path.

The feed probe (:mod:`blackboard.probe`) and the rate limiter (:mod:`blackboard.ratelimit`)
each ask Redis one small question per recall or request. redis-py's pool would cost a
request a trip through its timeout task and the event loop; here a question is one
``send`` and its answer one ``recv`` parsed by hiredis, on a plain RESP2 socket connected
as the blackboard's own Redis user (same address, credentials and database). One question
is in flight at a time: :meth:`SideSocket.claim` lends the socket, or None (busy, closed,
a connection kind it does not speak: cluster, TLS, a credential provider), and the caller
then asks through the pool.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .packing import pack

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["Address", "RespSocket", "SideSocket", "plain_address"]

log = logging.getLogger(__name__)


class _NoAnswer(ConnectionError):
    """A side socket gave no answer to trust (closed, refused, an error reply). An
    ``OSError``: an asker treats it as the socket failing, and asks through the pool."""


class SideSocket:
    """The socket of one asker (``what``, for the log), lent for one question at a time and
    opened on first use. ``retry_refused``: whether a refused login (a rotated password)
    is tried again at the next claim (it may heal) or ends the socket's use for good (the
    pool answers from then on). ``sock`` is the open socket, if any."""

    def __init__(self, bb: Blackboard, what: str, *, retry_refused: bool) -> None:
        self.bb = bb
        self.what = what
        self.retry_refused = retry_refused
        self.address = plain_address(bb)
        self.sock: RespSocket | None = None
        self._busy = False
        self._closed = False

    async def claim(self) -> RespSocket | None:
        """The socket, now reserved until :meth:`release`; None when it is busy, closed,
        of a kind this does not speak, or cannot open."""
        if self._busy or self._closed or self.address is None:
            return None
        self._busy = True
        if self.sock is None:
            try:
                self.sock = await RespSocket.open(self.address, self.bb.settings.connect_timeout)
            except (OSError, TimeoutError) as exc:  # _NoAnswer among them
                log.debug("%s cannot open its socket (%s); asking through the pool",
                          self.what, exc)
                if isinstance(exc, _NoAnswer) and not self.retry_refused:
                    self.address = None  # stop trying: the pool answers from now on
                self._busy = False
                return None
        return self.sock

    def release(self) -> None:
        """The question is done (answered, or the socket dropped)."""
        self._busy = False

    def drop(self) -> None:
        """Close the socket (an unread or untrusted reply would answer the next question);
        the next claim opens another."""
        sock, self.sock = self.sock, None
        if sock is not None:
            sock.close()

    def close(self) -> None:
        self._closed = True
        self.drop()


@dataclass(frozen=True, slots=True)
class Address:
    """Where and as whom the blackboard's pool connects: a side socket connects the same way."""

    family: socket.AddressFamily
    target: str | tuple[str, int]
    login: tuple[bytes, ...]  # AUTH's arguments; () without a password
    db: int


def plain_address(bb: Blackboard) -> Address | None:
    """The pool's address when its connections are plain TCP or Unix sockets logged in
    with a password (or none); None for what a side socket does not speak."""
    if bb.cluster:
        return None
    try:
        import hiredis  # noqa: F401  (the parser of the replies)
    except ImportError:
        return None
    pool = bb.client.connection_pool
    kw = pool.connection_kwargs
    if "ssl" in pool.connection_class.__name__.lower() or kw.get("credential_provider"):
        return None
    pw, user = kw.get("password"), kw.get("username")
    login = tuple(str(x).encode() for x in (user, pw) if x is not None) if pw is not None else ()
    db = int(kw.get("db") or 0)
    if kw.get("path"):
        return Address(socket.AF_UNIX, str(kw["path"]), login, db)
    if kw.get("host"):
        return Address(socket.AF_INET, (str(kw["host"]), int(kw.get("port") or 6379)),
                        login, db)
    return None


class RespSocket:
    """A non-blocking socket speaking RESP2, one reply read at a time (hiredis parses)."""

    def __init__(self, sock: socket.socket) -> None:
        import hiredis

        self._sock = sock
        self._reader = hiredis.Reader()
        self._loop = asyncio.get_running_loop()

    @classmethod
    async def open(cls, a: Address, limit_s: float) -> RespSocket:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(limit_s):
            if a.family == socket.AF_UNIX:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.setblocking(False)
                target: Any = a.target
            else:
                assert isinstance(a.target, tuple)
                host, port = a.target
                info = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
                fam, kind, proto, _, target = info[0]
                sock = socket.socket(fam, kind, proto)
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s = cls(sock)
            try:
                await loop.sock_connect(sock, target)
                for cmd in ((b"AUTH", *a.login) if a.login else None,
                            (b"SELECT", a.db) if a.db else None):
                    if cmd is not None:
                        await loop.sock_sendall(sock, pack(*cmd))
                        await s.reply(limit_s)
            except BaseException:
                s.close()
                raise
        return s

    def send(self, data: bytes) -> bool:
        """Write ``data`` now; False when it did not all go (a full or closed socket): then
        there is nothing to read back and the socket must be dropped."""
        try:
            n = self._sock.send(data)
        except OSError:
            return False
        return n == len(data)  # a partial write leaves half a command: the caller drops us

    async def reply(self, limit_s: float) -> Any:
        """The next reply: from what the kernel holds already when it is all there, else
        waiting for the rest (at most ``limit_s`` seconds)."""
        import hiredis

        got = self._reader.gets()
        while got is False:
            try:
                data = self._sock.recv(65536)
            except BlockingIOError:
                async with asyncio.timeout(limit_s):
                    data = await self._loop.sock_recv(self._sock, 65536)
            if not data:
                raise _NoAnswer("connection closed")
            self._reader.feed(data)
            got = self._reader.gets()
        if isinstance(got, hiredis.ReplyError):
            raise _NoAnswer(str(got))  # NOSCRIPT among them: the pool's path loads it
        return got

    def close(self) -> None:
        self._sock.close()
