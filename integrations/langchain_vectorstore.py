"""A LangChain vector store kept in one blackboard scope of an agent (or of its team).

::

    from integrations.langchain import BlackboardVectorStore

    store = BlackboardVectorStore(mem, embeddings)            # the agent's ltm:semantic
    ids = store.add_texts(["Acme pays in 30 days"], metadatas=[{"src": "crm"}])
    store.similarity_search("payment terms", k=3)

A document is one entry: its text in the value's ``text``, its metadata as the entry's
metadata, its id as the entry's logical key (so adding an id again updates that entry in
place). With a LangChain ``Embeddings`` the document's vector is kept in the value
(``vector``: the model's name and its float32 bytes in base64; the entry's own embedding
field belongs to the blackboard's indexer, which would replace it) and a search is exact
cosine over the scope's entries, O(entries) per query; an entry without a vector of this
model (written by someone else) is embedded at search time. Without ``Embeddings`` a search
is our recall (dense + BM25 + filters) over the scope. Writes are one atomic batch,
validated and embedded before anything is sent; the scope must be one the agent may write,
and a confined agent's Redis user refuses any other whatever this adapter checks.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from blackboard import Entry, InvalidArgument, NotFound
from blackboard.request import WriteRequest
from blackboard.validation import validate_key
from memory import AgentMemory, MemoryLevel, MemoryQuery, SyncMemory, parse_scope

from .langchain_bridge import MemoryBridge, check_k, missing_langchain

try:
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import VectorStore
except ImportError as exc:
    raise missing_langchain(exc) from exc

__all__ = ["BlackboardVectorStore"]

Scored = list[tuple[Document, float]]


def model_name(embedding: Embeddings) -> str:
    """The name a stored vector is kept under: the class and, when it says one, the model."""
    model = getattr(embedding, "model", None) or getattr(embedding, "model_name", None)
    name = type(embedding).__qualname__
    return f"{name}:{model}" if isinstance(model, str) and model else name


def _document(e: Entry) -> Document:
    return Document(id=e.key or e.id, page_content=e.text, metadata=dict(e.metadata))


def _matches(meta: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    return not flt or all(meta.get(k) == v for k, v in flt.items())


class BlackboardVectorStore(VectorStore):
    """Documents in scope ``scope`` (default: the agent's, or team ``team``'s, ``level``
    scope, long-term semantic memory unless told) of ``memory`` (an AgentMemory: async
    calls only; a SyncMemory: both). ``embedding``: the LangChain ``Embeddings`` to search
    with (None: our recall). Searches take ``filter``, a mapping of metadata equalities."""

    def __init__(self, memory: AgentMemory | SyncMemory, embedding: Embeddings | None = None,
                 *, scope: str | None = None, level: MemoryLevel | str = MemoryLevel.SEMANTIC,
                 team: str | None = None) -> None:
        self._bridge = MemoryBridge(memory)
        mem = self._bridge.memory
        sid = scope if scope is not None else mem.scope_for(level, team)
        parse_scope(sid)  # InvalidScope: not a memory scope
        self.scope_id = mem.access.check_write(sid)
        if embedding is not None and not isinstance(embedding, Embeddings):
            raise InvalidArgument(
                f"embedding must be a LangChain Embeddings, not {type(embedding).__name__}")
        self._embedding = embedding
        self._model = model_name(embedding) if embedding is not None else None

    @property
    def embeddings(self) -> Embeddings | None:
        return self._embedding

    # -- writes ---------------------------------------------------------------------------

    def _requests(self, texts: Sequence[str], metadatas: Sequence[Mapping[str, Any]] | None,
                  ids: Sequence[str | None] | None) -> tuple[list[str], list[WriteRequest]]:
        """Checked write requests with their document ids (vectors not yet attached)."""
        bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
        if bad:
            raise InvalidArgument(f"texts must be strings (not at positions {bad[:5]})")
        n = len(texts)
        for name, seq in (("metadatas", metadatas), ("ids", ids)):
            if seq is not None and len(seq) != n:
                raise InvalidArgument(f"{len(seq)} {name} for {n} texts")
        doc_ids = [validate_key(i) if i is not None else str(uuid.uuid4())
                   for i in (ids if ids is not None else [None] * n)]
        if len(set(doc_ids)) != n:
            dup = sorted({i for i in doc_ids if doc_ids.count(i) > 1})
            raise InvalidArgument(f"ids repeated in one call: {dup[:5]}")
        mds = metadatas if metadatas is not None else [{}] * n
        reqs = [WriteRequest({"text": t}, metadata=dict(md or {}), key=i,
                             author=self._bridge.agent_id)
                for t, md, i in zip(texts, mds, doc_ids, strict=True)]
        return doc_ids, reqs

    def _with_vectors(self, reqs: list[WriteRequest],
                      vectors: Sequence[Sequence[float]] | None) -> list[WriteRequest]:
        if vectors is None:
            return reqs
        if len(vectors) != len(reqs):
            raise InvalidArgument(f"the embeddings gave {len(vectors)} vectors for "
                                  f"{len(reqs)} texts")
        out = []
        for r, v in zip(reqs, vectors, strict=True):
            raw = np.asarray(v, dtype=np.float32).tobytes()
            vec = {"model": self._model, "float32": base64.b64encode(raw).decode("ascii")}
            out.append(WriteRequest({**r.value, "vector": vec}, metadata=r.metadata,
                                    key=r.key, author=r.author))
        return out

    async def _write(self, mem: AgentMemory, reqs: list[WriteRequest]) -> None:
        if reqs:
            # registers the scope with its level's policy, as AgentMemory.store does
            await mem._ensure(self.scope_id)
            await mem.bb.scope(self.scope_id).write_many(reqs)

    def add_texts(self, texts: Iterable[str], metadatas: list[dict[str, Any]] | None = None,
                  *, ids: list[str] | None = None, **kwargs: Any) -> list[str]:
        _no_extra(kwargs, "add_texts")
        texts = _text_list(texts)
        doc_ids, reqs = self._requests(texts, metadatas, ids)
        vecs = self._embedding.embed_documents(texts) if self._embedding and texts else None
        reqs = self._with_vectors(reqs, vecs)
        self._bridge.run(lambda m: self._write(m, reqs))
        return doc_ids

    async def aadd_texts(self, texts: Iterable[str],
                         metadatas: list[dict[str, Any]] | None = None, *,
                         ids: list[str] | None = None, **kwargs: Any) -> list[str]:
        _no_extra(kwargs, "aadd_texts")
        texts = _text_list(texts)
        doc_ids, reqs = self._requests(texts, metadatas, ids)
        vecs = (await self._embedding.aembed_documents(texts)
                if self._embedding and texts else None)
        reqs = self._with_vectors(reqs, vecs)
        await self._bridge.arun(lambda m: self._write(m, reqs))
        return doc_ids

    # -- reads and deletes by id ----------------------------------------------------------

    async def _find(self, mem: AgentMemory, ids: Sequence[str]) -> list[Entry | None]:
        """The entry of each document id: the entry holding it as its key, else (an entry
        written without a key) the entry of that id."""
        for i in ids:
            validate_key(i)
        scope = mem.bb.scope(self.scope_id)
        out: list[Entry | None] = []
        for i in ids:
            try:
                out.append(await scope.get_by_key(i))
                continue
            except NotFound:
                pass
            try:
                e = await scope.get(i)
            except (NotFound, InvalidArgument):  # not an entry id either
                e = None
            out.append(e if e is not None and not e.key else None)
        return out

    async def _get(self, mem: AgentMemory, ids: Sequence[str]) -> list[Document]:
        return [_document(e) for e in await self._find(mem, ids) if e is not None]

    async def _delete(self, mem: AgentMemory, ids: Sequence[str]) -> bool:
        scope = mem.bb.scope(self.scope_id)
        for e in await self._find(mem, ids):
            if e is not None:
                await scope.delete(e.id)
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        ids = _id_list(ids)
        return self._bridge.run(lambda m: self._get(m, ids))

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        ids = _id_list(ids)
        return await self._bridge.arun(lambda m: self._get(m, ids))

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        _no_extra(kwargs, "delete")
        ids = _id_list(ids)
        return self._bridge.run(lambda m: self._delete(m, ids))

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        _no_extra(kwargs, "adelete")
        ids = _id_list(ids)
        return await self._bridge.arun(lambda m: self._delete(m, ids))

    # -- search ---------------------------------------------------------------------------

    async def _by_vector(self, mem: AgentMemory, qvec: Sequence[float], k: int,
                         flt: Mapping[str, Any] | None) -> Scored:
        """Exact cosine over the scope's entries (those passing ``flt``)."""
        entries = [e for e in await mem.bb.scope(self.scope_id).entries(limit=None)
                   if _matches(e.metadata, flt)]
        q = np.asarray(qvec, dtype=np.float32)
        vecs: list[npt.NDArray[np.float32] | None] = [self._stored(e, q.shape[0]) for e in entries]
        todo = [i for i, v in enumerate(vecs) if v is None]
        if todo and self._embedding is not None:
            made = await self._embedding.aembed_documents([entries[i].text for i in todo])
            for i, v in zip(todo, made, strict=True):
                vecs[i] = np.asarray(v, dtype=np.float32)
        if not entries:
            return []
        m = np.stack([v for v in vecs if v is not None])  # all set: the store has Embeddings
        norms = np.linalg.norm(m, axis=1) * (np.linalg.norm(q) or 1.0)
        sims = (m @ q) / np.where(norms == 0, 1.0, norms)
        best = np.argsort(-sims, kind="stable")[:k]
        return [(_document(entries[i]), float(sims[i])) for i in best]

    def _stored(self, e: Entry, dim: int) -> npt.NDArray[np.float32] | None:
        """The entry's vector of this store's model, None when it has none (or another
        model's, or a damaged one)."""
        v = e.value.get("vector") if isinstance(e.value, dict) else None
        if not isinstance(v, dict) or v.get("model") != self._model:
            return None
        try:
            raw = base64.b64decode(v.get("float32", ""), validate=True)
        except (ValueError, TypeError):
            return None
        return np.frombuffer(raw, dtype=np.float32) if len(raw) == 4 * dim else None

    async def _by_recall(self, mem: AgentMemory, query: str, k: int,
                         flt: Mapping[str, Any] | None) -> Scored:
        if not query.strip():
            raise InvalidArgument("a search by recall needs a non-empty query")
        depth = k if not flt else min(max(10 * k, 100), 1000)
        hits = await mem.recall(MemoryQuery(query=query, scopes=[self.scope_id],
                                            max_results=depth, collapse=False))
        out = [(_document(h.entry), h.score) for h in hits if _matches(h.entry.metadata, flt)]
        return out[:k]

    def similarity_search_with_score(self, query: str, k: int = 4, **kwargs: Any) -> Scored:
        k, flt = _search_args(k, kwargs, query)
        if self._embedding is None:
            return self._bridge.run(lambda m: self._by_recall(m, query, k, flt))
        qvec = self._embedding.embed_query(query)
        return self._bridge.run(lambda m: self._by_vector(m, qvec, k, flt))

    async def asimilarity_search_with_score(self, query: str, k: int = 4,
                                            **kwargs: Any) -> Scored:
        k, flt = _search_args(k, kwargs, query)
        if self._embedding is None:
            return await self._bridge.arun(lambda m: self._by_recall(m, query, k, flt))
        qvec = await self._embedding.aembed_query(query)
        return await self._bridge.arun(lambda m: self._by_vector(m, qvec, k, flt))

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return [d for d, _ in self.similarity_search_with_score(query, k, **kwargs)]

    async def asimilarity_search(self, query: str, k: int = 4,
                                 **kwargs: Any) -> list[Document]:
        return [d for d, _ in await self.asimilarity_search_with_score(query, k, **kwargs)]

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4,
                                    **kwargs: Any) -> list[Document]:
        k, flt = _search_args(k, kwargs)
        if self._embedding is None:
            raise InvalidArgument("a search by vector needs the store's Embeddings")
        return [d for d, _ in self._bridge.run(lambda m: self._by_vector(m, embedding, k, flt))]

    async def asimilarity_search_by_vector(self, embedding: list[float], k: int = 4,
                                           **kwargs: Any) -> list[Document]:
        k, flt = _search_args(k, kwargs)
        if self._embedding is None:
            raise InvalidArgument("a search by vector needs the store's Embeddings")
        found = await self._bridge.arun(lambda m: self._by_vector(m, embedding, k, flt))
        return [d for d, _ in found]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        if self._embedding is not None:
            # cosine in [-1, 1] -> [0, 1] (float32 rounding can step just outside)
            return lambda cos: min(1.0, max(0.0, (1.0 + cos) / 2.0))
        return lambda score: min(1.0, max(0.0, score))  # recall's score, about [0, 1.15]

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_texts(cls, texts: list[str], embedding: Embeddings | None,
                   metadatas: list[dict[str, Any]] | None = None, *,
                   ids: list[str] | None = None, **kwargs: Any) -> BlackboardVectorStore:
        """A store (``memory=`` required; ``scope``, ``level``, ``team`` as the
        constructor's) holding ``texts``."""
        store = cls(_memory_arg(kwargs), embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store

    @classmethod
    async def afrom_texts(cls, texts: list[str], embedding: Embeddings | None,
                          metadatas: list[dict[str, Any]] | None = None, *,
                          ids: list[str] | None = None,
                          **kwargs: Any) -> BlackboardVectorStore:
        store = cls(_memory_arg(kwargs), embedding, **kwargs)
        await store.aadd_texts(texts, metadatas, ids=ids)
        return store


def _memory_arg(kwargs: dict[str, Any]) -> AgentMemory | SyncMemory:
    mem = kwargs.pop("memory", None)
    if mem is None:
        raise InvalidArgument("from_texts needs memory= (an AgentMemory or a SyncMemory)")
    return mem


def _text_list(texts: Iterable[str]) -> list[str]:
    if isinstance(texts, str):
        raise InvalidArgument("texts must be a list of strings, not one string")
    return list(texts)


def _id_list(ids: Sequence[str] | None) -> list[str]:
    if ids is None:
        raise InvalidArgument("name the ids to act on (this store never deletes a whole "
                              "scope at once)")
    if isinstance(ids, str):
        raise InvalidArgument("ids must be a list of ids, not one string")
    return list(ids)


def _search_args(k: object, kwargs: dict[str, Any],
                 query: object = "") -> tuple[int, Mapping[str, Any] | None]:
    if not isinstance(query, str):
        raise InvalidArgument(f"query must be a string, not {type(query).__name__}")
    flt = kwargs.pop("filter", None)
    _no_extra(kwargs, "a search")
    if flt is not None and not isinstance(flt, Mapping):
        raise InvalidArgument("filter must be a mapping of metadata field to value")
    return check_k(k), flt


def _no_extra(kwargs: Mapping[str, Any], what: str) -> None:
    if kwargs:
        raise InvalidArgument(f"{what} does not take {sorted(kwargs)}")
