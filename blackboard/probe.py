"""The feed probe: scopes' newest feed ids, asked so the round trip hides behind work.

A reader that must see every write acknowledged before it (the index follower's
read-your-writes check) asks Redis for each scope's newest feed id and compares with what
it has applied. The question costs a round trip, and the reader has CPU-bound work to do
anyway (a search): :meth:`FeedProbe.around` puts the question on the wire, runs the work,
and reads the answer after it, so a search longer than the round trip hides it.

The probe speaks to Redis on a socket of its own, as the blackboard's own Redis user
(same address, credentials and database), because the pool's connections cannot do this
cheaply: redis-py writes through a timeout task that needs the loop the work is holding,
and reads through the loop even when the answer is already in the kernel's buffer. Here
the question is one ``send`` before the work and, in the usual case, the answer one
``recv`` after it, with no trip through the event loop.

One question is in flight at a time. A caller that finds the probe busy, a cluster client
(its feeds span nodes), a TLS or credential-provider connection (the probe speaks plain
RESP2 only), or a failed socket asks through the pool instead: the same answer, with the
round trip sent as soon as the loop lets it.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .packing import pack
from .reads import heads_reply
from .scripts import SCRIPTS

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["FeedProbe"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class _NoAnswer(Exception):
    """The probe's socket gave no answer to trust (closed, refused, an error reply)."""


class FeedProbe:
    """Each scope's newest feed id, asked around a piece of the caller's work.

    ``await probe.around(scopes, work)`` -> ``(work(), {scope: newest feed id})``: the ids
    are at least as new as every write acknowledged before the call. Made by
    :attr:`Blackboard.feed_probe`; closed with the blackboard. ``direct`` and ``pooled``
    count the questions answered on the probe's socket and through the pool.
    """

    def __init__(self, bb: Blackboard) -> None:
        self.bb = bb
        self._address = _plain_address(bb)
        self._sock: _Socket | None = None
        self._busy = False
        self._closed = False
        self._questions: dict[tuple[str, ...], _Question] = {}
        self.direct = 0
        self.pooled = 0

    async def around(
        self, scope_ids: Sequence[str], work: Callable[[], T]
    ) -> tuple[T, dict[str, str]]:
        """Run ``work()`` (synchronous) while Redis answers each scope's newest feed id."""
        q = self._question(scope_ids)
        sock = await self._claim() if q.feeds else None
        if sock is None:
            return await self._through_pool(q, work)
        try:
            sent = sock.send(q.packed)
            result = work()
            reply = await self._answer(sock) if sent else None
        except BaseException:
            self._drop()  # an unread reply would answer the next question
            raise
        finally:
            self._busy = False
        if reply is None:  # asked after the work: newer ids, still a sound check
            self._drop()
            self.pooled += 1
            return result, await self.bb.reads.newest_event_ids(q.scopes)
        self.direct += 1
        return result, heads_reply(q.scopes, reply)

    async def aclose(self) -> None:
        self._closed = True
        self._drop()

    async def _answer(self, sock: _Socket) -> list[bytes] | None:
        try:
            reply: list[bytes] = await sock.reply(self.bb.settings.socket_timeout)
        except (_NoAnswer, OSError, TimeoutError) as exc:
            log.debug("feed probe got no answer (%s); asking through the pool", exc)
            return None
        return reply

    def _question(self, scope_ids: Sequence[str]) -> _Question:
        """The feeds of ``scope_ids`` and the packed ``heads.lua`` call (a recall asks
        about the same scopes each time: made once per set). ``EVALSHA_RO``: ACL counts
        EVALSHA's keys as written, and a reader may only read a team's feed."""
        key = tuple(scope_ids)
        q = self._questions.get(key)
        if q is None:
            feeds = tuple(self.bb.scope(s).keys.feed for s in key)
            packed = pack("EVALSHA_RO", SCRIPTS["heads"].sha, len(feeds), *feeds)
            if len(self._questions) >= 256:
                self._questions.clear()
            q = self._questions[key] = _Question(key, feeds, packed)
        return q

    async def _claim(self) -> _Socket | None:
        """The probe's socket, now reserved for one question (opened on first use); None
        when it is busy, closed, of a kind the probe does not speak, or cannot open."""
        if self._busy or self._closed or self._address is None:
            return None
        self._busy = True
        if self._sock is None:
            try:
                self._sock = await _Socket.open(self._address, self.bb.settings.connect_timeout)
            except (_NoAnswer, OSError, TimeoutError) as exc:
                log.debug("feed probe cannot connect (%s); asking through the pool", exc)
                if isinstance(exc, _NoAnswer):
                    self._address = None  # a refused login does not heal: stop trying
                self._busy = False
                return None
        return self._sock

    def _drop(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    async def _through_pool(self, q: _Question, work: Callable[[], T]) -> tuple[T, dict[str, str]]:
        self.pooled += 1
        if not q.feeds:
            return work(), {}
        asked = asyncio.ensure_future(self.bb.reads.newest_event_ids(q.scopes))
        await asyncio.sleep(0)  # the question may leave before the work holds the loop
        try:
            result = work()
        finally:
            got = await asked
        return result, got


@dataclass(frozen=True, slots=True)
class _Question:
    scopes: tuple[str, ...]
    feeds: tuple[str, ...]
    packed: bytes


@dataclass(frozen=True, slots=True)
class _Address:
    """Where and as whom the blackboard's pool connects: the probe connects the same way."""

    family: socket.AddressFamily
    target: str | tuple[str, int]
    login: tuple[bytes, ...]  # AUTH's arguments; () without a password
    db: int


def _plain_address(bb: Blackboard) -> _Address | None:
    """The pool's address when its connections are plain TCP or Unix sockets logged in
    with a password (or none); None for what the probe does not speak."""
    if bb.cluster:
        return None
    try:
        import hiredis  # noqa: F401  (the parser of the probe's replies)
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
        return _Address(socket.AF_UNIX, str(kw["path"]), login, db)
    if kw.get("host"):
        return _Address(socket.AF_INET, (str(kw["host"]), int(kw.get("port") or 6379)),
                        login, db)
    return None


class _Socket:
    """A non-blocking socket speaking RESP2, one reply read at a time (hiredis parses)."""

    def __init__(self, sock: socket.socket) -> None:
        import hiredis

        self._sock = sock
        self._reader = hiredis.Reader()
        self._loop = asyncio.get_running_loop()

    @classmethod
    async def open(cls, a: _Address, limit_s: float) -> _Socket:
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
