"""The feed probe: scopes' newest feed ids, asked so the round trip hides behind work.

A reader that must see every write acknowledged before it (the index follower's
read-your-writes check) asks Redis for each scope's newest feed id and compares with what
it has applied. The question costs a round trip, and the reader has CPU-bound work to do
anyway (a search): :meth:`FeedProbe.around` puts the question on the wire, runs the work,
and reads the answer after it, so a search longer than the round trip hides it.

The probe speaks to Redis on a socket of its own (:mod:`blackboard.side_socket`), as the
blackboard's own Redis user (same address, credentials and database), because the pool's
connections cannot do this cheaply: redis-py writes through a timeout task that needs the
loop the work is holding, and reads through the loop even when the answer is already in
the kernel's buffer. Here the question is one ``send`` before the work and, in the usual
case, the answer one ``recv`` after it, with no trip through the event loop.

One question is in flight at a time. A caller that finds the probe busy, a cluster client
(its feeds span nodes), a TLS or credential-provider connection (the probe speaks plain
RESP2 only), or a failed socket asks through the pool instead: the same answer, with the
round trip sent as soon as the loop lets it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from .feed_reads import heads_reply
from .packing import pack
from .scripts import SCRIPTS
from .side_socket import RespSocket, SideSocket

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["FeedProbe"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class FeedProbe:
    """Each scope's newest feed id, asked around a piece of the caller's work.

    ``await probe.around(scopes, work)`` -> ``(work(), {scope: newest feed id})``: the ids
    are at least as new as every write acknowledged before the call. Made by
    :attr:`Blackboard.feed_probe`; closed with the blackboard. ``direct`` and ``pooled``
    count the questions answered on the probe's socket and through the pool.
    """

    def __init__(self, bb: Blackboard) -> None:
        self.bb = bb
        # a refused login does not heal here: stop trying, the pool answers
        self._side = SideSocket(bb, "feed probe", retry_refused=False)
        self._questions: dict[tuple[str, ...], _Question] = {}
        self.direct = 0
        self.pooled = 0

    async def around(
        self, scope_ids: Sequence[str], work: Callable[[], T]
    ) -> tuple[T, dict[str, str]]:
        """Run ``work()`` (synchronous) while Redis answers each scope's newest feed id."""
        q = self._question(scope_ids)
        sock = await self._side.claim() if q.feeds else None
        if sock is None:
            return await self._through_pool(q, work)
        try:
            sent = sock.send(q.packed)
            result = work()
            reply = await self._answer(sock) if sent else None
        except BaseException:
            self._side.drop()  # an unread reply would answer the next question
            raise
        finally:
            self._side.release()
        if reply is None:  # asked after the work: newer ids, still a sound check
            self._side.drop()
            self.pooled += 1
            return result, await self.bb.reads.newest_event_ids(q.scopes)
        self.direct += 1
        return result, heads_reply(q.scopes, reply)

    async def aclose(self) -> None:
        self._side.close()

    async def _answer(self, sock: RespSocket) -> list[bytes] | None:
        try:
            reply: list[bytes] = await sock.reply(self.bb.settings.socket_timeout)
        except (OSError, TimeoutError) as exc:  # no answer to trust: the pool asks
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
