"""The embedding queue: the follower's path into the engine, keeping vectors computed once.

An entry whose stored vector comes from the engine's embedder is never re-embedded; any
other is queued in the engine, embedded in batches in a thread (or by the next search,
whichever comes first), and the vector is stored back in Redis with ``set_embeddings`` so a
restart reuses it.

The index role (``workers.indexer``) embeds the same entries and stores their vectors
without an event, so the feed never says one arrived. Before each batch the queue reads the
stored vectors of the entries it is about to embed (one round trip) and adopts those of its
embedder at the entry's version; and while an index worker drains the partitions' queues it
leaves the rest to it, for as long as vectors keep arriving (:data:`DEFER_S`): on a
machine of two cores, the gateway's model running the same backlog again would hold both
while the dashboard waits. Searches still embed what they need inline; a semantic wait
(:meth:`EmbeddingQueue.hurry`) and a worker gone quiet end the deferral.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict, deque
from collections.abc import Collection
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from blackboard import Blackboard, Entry

from .engine import SearchEngine

__all__ = ["EmbeddingQueue"]

log = logging.getLogger(__name__)

#: Entries taken from the engine's queue per background batch: small enough that the
#: scopes being searched (taken first, :meth:`SearchEngine.take_pending`) get their
#: vectors soon, larger than the engine's ``inline_embed`` so a search never waits for a
#: backlog's batch (:meth:`EmbeddingQueue.settled`).
TAKE = 128
#: Entries whose stored vectors are read before a batch: more than one batch, as the index
#: role embeds in its own order (oldest queued first), not in ours.
LOOK = 512
#: While an index worker drains the partitions, the background embedding waits for its
#: vectors this long after the last one adopted (or after the wait began): a worker that
#: stalls, or embeds with another model, delays ours by this much, once per backlog. Its
#: vectors arrive a model call at a time, and a call takes up to 512 texts: ~6 s for the
#: demo's backlog of ~300 entries on a quiet machine of two cores, over 10 s at a load
#: average of 14 (measured: at 10 s the gateway gave up and embedded ~150 of them too).
DEFER_S = 30.0
#: How often a deferred backlog looks for the worker's vectors: soon after some arrived,
#: then twice as long after each look that found none, up to :data:`DEFER_POLL_MAX_S`.
#: The worker stores them a model call at a time (seconds apart while it works through a
#: backlog), and each look reads the next :data:`LOOK` entries' stored vectors: at a fixed
#: 0.25 s those reads took 20-70 ms of the gateway's CPU a second, the floor of every page
#: the dashboard served meanwhile. A search adopts what its scopes need itself, at once.
DEFER_POLL_S = 0.25
DEFER_POLL_MAX_S = 2.0
#: An index worker counts as live when it beat this recently: a worker whose record did
#: not change rewrites its beat every ``REFRESH_BEATS`` (10) beats of a second by default
#: (``workers.heartbeat``), e.g. through a long model call.
INDEX_LIVE_MS = 15_000


class EmbeddingQueue:
    """Adds entries to ``engine`` and stores the vectors it computes back in Redis.

    Owns two tasks on the running loop: one embeds the engine's queue in a thread after each
    :meth:`add` (a search awaits :meth:`settled` first; with ``background`` off, only when
    woken), one writes vectors back (when ``write_back``). Hooks ``engine.on_embedded``
    until :meth:`detach`. ``computed`` counts the entries' vectors the engine computed (here
    or in a search; ``in_background``: here), ``stored`` those written back, ``adopted``
    those found stored by another process instead, ``deferred`` the rounds left to a live
    index worker.
    """

    def __init__(self, bb: Blackboard, engine: SearchEngine, *, write_back: bool = True,
                 background: bool = True) -> None:
        self.bb, self.engine, self.write_back = bb, engine, write_back
        #: Embed what is added in the background; off, only searches embed (what they
        #: find, within ``engine.inline_embed``) and :meth:`wake` (a semantic wait).
        self.background = background
        self.computed = self.in_background = self.stored = self.adopted = self.deferred = 0
        self._stopped = False
        self._hurry = False
        #: While deferring to an index worker: when the background embedding goes on
        #: without it (None: not deferring).
        self._defer_until: float | None = None
        self._poll: asyncio.TimerHandle | None = None
        self._poll_s = DEFER_POLL_S
        self._said = (0, 0)  # (adopted, computed) when last logged
        self._embed_wake = asyncio.Event()
        self._store_wake = asyncio.Event()
        self._to_store: deque[tuple[str, str, int, bytes]] = deque()
        self._inflight: asyncio.Future[None] | None = None
        self._inflight_n = 0
        self._loop = asyncio.get_running_loop()
        engine.on_embedded = self._embedded
        self._tasks = [
            self._loop.create_task(self._embed_loop()),
            self._loop.create_task(self._store_loop()),
        ]

    def add(self, entries: list[Entry]) -> None:
        """Upsert ``entries`` into the engine; those without a usable vector are embedded
        in the background."""
        emb = self.engine.embedder
        out = []
        for e in entries:
            if e.embedding is not None and emb is not None and e.embedder == emb.name:
                old = self.engine.get(e.id)
                # An update that changed the text keeps the old stored vector (the update
                # script does not clear it): embed the new text instead.
                if (
                    old is not None
                    and old.version != e.version
                    and self.engine.text_fn(old) != self.engine.text_fn(e)
                ):
                    e = replace(e, embedding=None, embedder=None)
            out.append(e)
        if out:
            self.engine.add(out, embed_now=False)
            if self.background:
                self._embed_wake.set()

    def wake(self) -> None:
        """Embed whatever the engine has queued, soon (after the index role, if live)."""
        self._embed_wake.set()

    def hurry(self) -> None:
        """Embed the next batch of what is queued now, without waiting for the index role
        (a semantic wait: its caller waits for every vector)."""
        self._hurry = True
        self._embed_wake.set()

    def stop(self) -> None:
        """Let the tasks end at their next wake-up without embedding or storing more."""
        self._stopped = True
        if self._poll is not None:
            self._poll.cancel()

    async def aclose(self) -> None:
        """Stop, wait for the tasks, then store the vectors still queued."""
        self.stop()
        self._store_wake.set()
        self._embed_wake.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.store_pending()

    def detach(self) -> None:
        """Unhook from the engine: vectors it computes from now on are not stored."""
        self.engine.on_embedded = None

    def _embedded(self, made: list[tuple[Entry, npt.NDArray[np.float32]]]) -> None:
        # Runs on whichever thread embedded (a search or the embed loop), under the engine's
        # lock: count and queue only.
        self.computed += len(made)
        for e, v in made:
            self._to_store.append((e.scope, e.id, e.version, np.asarray(v, np.float32).tobytes()))
        with contextlib.suppress(RuntimeError):  # loop closed: the vectors stay unstored
            self._loop.call_soon_threadsafe(self._store_wake.set)

    async def settled(self, max_batch: int | None = None) -> None:
        """Wait until no batch is being embedded, or (``max_batch``) none of more than that
        many entries: a search that follows (before the loop runs anything else) then sees
        the vector of every entry it finds, since what is still queued is embedded by the
        search itself. A larger batch means the model is behind the writes: waiting for it
        would make the search's cost the backlog's."""
        while self._inflight is not None and (max_batch is None or self._inflight_n <= max_batch):
            await asyncio.shield(self._inflight)

    async def _embed_loop(self) -> None:
        while not self._stopped:
            await self._embed_wake.wait()
            self._embed_wake.clear()
            if self._stopped:
                return
            hurry, self._hurry = self._hurry, False
            progress = await self.adopt()
            if progress and not self.engine.waiting:
                self._say_done()
            if not hurry and await self._defer(progress):
                self.deferred += 1
                if self._poll is not None:
                    self._poll.cancel()
                self._poll_s = (DEFER_POLL_S if progress
                                else min(DEFER_POLL_MAX_S, self._poll_s * 2))
                self._poll = self._loop.call_later(self._poll_s, self._embed_wake.set)
                continue
            self._poll_s = DEFER_POLL_S
            # Taken here, on the loop: once settled() returns, no batch is out of the
            # queue without its vectors in the engine.
            batch = self.engine.take_pending(
                min(self.engine.embed_batch, max(TAKE, self.engine.inline_embed + 1)))
            if not batch:
                continue
            if self.engine.waiting:
                self._embed_wake.set()  # more than a batch queued: the next one after this
            done = self._inflight = self._loop.create_future()
            self._inflight_n = len(batch)
            try:
                # The model runs in a thread and outside the engine's lock: requests,
                # feed events and searches go on meanwhile.
                vecs = await asyncio.to_thread(self.engine.embed_pending, batch)
            except BaseException as exc:
                self.engine.requeue(batch)
                if not isinstance(exc, Exception):
                    raise
                log.exception("embedding queued entries failed; the next search retries")
            else:
                self.in_background += self.engine.put_vectors(batch, vecs)
            finally:
                self._inflight = None
                done.set_result(None)
            if not self.engine.waiting:
                self._say_done()

    async def adopt(self, scopes: Collection[str] | None = None, look: int = LOOK) -> int:
        """Adopt the stored vectors of the next ``look`` entries to embed (``scopes``: of
        theirs; a search's, before it embeds them itself); -> how many. A failed read
        adopts none (they are embedded here, as before)."""
        emb = self.engine.embedder
        if emb is None:
            return 0
        # A search's scopes are counted from the columns first: the backlog (every
        # followed scope's) is not walked on each search when none of theirs waits.
        if scopes is not None and not self.engine.unembedded(scopes):
            return 0
        ahead = self.engine.peek_pending(look, scopes)
        if not ahead:
            return 0
        wanted: dict[str, list[Entry]] = defaultdict(list)
        for e in ahead:
            wanted[e.scope].append(e)
        try:
            got = await self.bb.stored_vectors.read(
                {s: [e.id for e in es] for s, es in wanted.items()})
        except Exception as exc:  # e.g. Redis away: the model does it
            log.debug("could not read stored vectors: %s", exc)
            return 0
        found = [
            (e.id, v.version, v.embedding)
            for s, es in wanted.items()
            for e, v in zip(es, got[s], strict=True)
            if v is not None and v.embedder == emb.name and v.version == e.version
        ]
        n = self.engine.adopt(found) if found else 0
        self.adopted += n
        return n

    def _say_done(self) -> None:
        # Once per backlog: how many vectors were taken from Redis against computed here.
        done = (self.adopted, self.computed)
        if done != self._said:
            log.info("embedding queue empty: %d vector(s) adopted from Redis, %d computed "
                     "here (%d in the background, the others by searches; %d round(s) "
                     "deferred to an index worker)", *done, self.in_background, self.deferred)
            self._said = done

    async def _defer(self, progress: int) -> bool:
        """Whether to leave what is queued to a live index worker a while longer: while
        one drains the partitions of the entries waiting, until :data:`DEFER_S` after the
        last vector adopted (or after the wait began)."""
        ahead = self.engine.peek_pending(LOOK)
        if not ahead:
            self._defer_until = None
            return False
        parts = {self.bb.scope(e.scope).partition for e in ahead}
        try:
            drained = await self.bb.stored_vectors.drained(parts, INDEX_LIVE_MS)
        except Exception as exc:  # e.g. Redis away: no deferral (the model goes on)
            log.debug("could not ask for index workers: %s", exc)
            drained = set()
        now = time.monotonic()
        if not drained:
            self._defer_until = None
            return False
        if self._defer_until is None or progress:
            self._defer_until = now + DEFER_S
        return now < self._defer_until

    async def _store_loop(self) -> None:
        while not self._stopped:
            await self._store_wake.wait()
            self._store_wake.clear()
            await self.store_pending()

    async def store_pending(self) -> None:
        """Write the queued vectors back (dropped unqueued when ``write_back`` is off)."""
        emb = self.engine.embedder
        if emb is None or not self._to_store:
            return
        by_scope: dict[str, list[tuple[str, int, bytes]]] = defaultdict(list)
        while self._to_store:
            s, eid, ver, vec = self._to_store.popleft()
            by_scope[s].append((eid, ver, vec))
        if not self.write_back:
            return
        for s, items in by_scope.items():
            try:
                self.stored += await self.bb.scope(s).set_embeddings(items, emb.name)
            except Exception as exc:  # e.g. an ACL user without write access to the scope
                log.warning("could not store %d embedding(s) in %s: %s", len(items), s, exc)
