"""The embedding queue: the follower's path into the engine, keeping vectors computed once.

An entry whose stored vector comes from the engine's embedder is never re-embedded; any
other is queued in the engine, embedded in batches in a thread (or by the next search,
whichever comes first), and the vector is stored back in Redis with ``set_embeddings`` so a
restart reuses it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict, deque
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


class EmbeddingQueue:
    """Adds entries to ``engine`` and stores the vectors it computes back in Redis.

    Owns two tasks on the running loop: one embeds the engine's queue in a thread after each
    :meth:`add` (a search awaits :meth:`settled` first; with ``background`` off, only when
    woken), one writes vectors back (when ``write_back``). Hooks ``engine.on_embedded``
    until :meth:`detach`. ``stored`` counts the vectors written back.
    """

    def __init__(self, bb: Blackboard, engine: SearchEngine, *, write_back: bool = True,
                 background: bool = True) -> None:
        self.bb, self.engine, self.write_back = bb, engine, write_back
        #: Embed what is added in the background; off, only searches embed (what they
        #: find, within ``engine.inline_embed``) and :meth:`wake` (a semantic wait).
        self.background = background
        self.stored = 0
        self._stopped = False
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
        """Embed whatever the engine has queued, soon."""
        self._embed_wake.set()

    def stop(self) -> None:
        """Let the tasks end at their next wake-up without embedding or storing more."""
        self._stopped = True

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
        # Runs on whichever thread embedded (a search or the embed loop): queue only.
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
                self.engine.put_vectors(batch, vecs)
            finally:
                self._inflight = None
                done.set_result(None)

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
