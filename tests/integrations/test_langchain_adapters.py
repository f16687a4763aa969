"""The LangChain adapters beyond LangChain's standard suites: what a Document carries, the
recall path, bad input (a clear error and nothing written), confinement (Redis refuses a
store over another agent's scope), async use with an AgentMemory, the missing extra."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from blackboard import AccessDenied, Blackboard, InvalidArgument, InvalidScope
from blackboard.acl import AclAdmin
from integrations.langchain import BlackboardRetriever, BlackboardVectorStore
from integrations.langchain_bridge import MISSING_LANGCHAIN, missing_langchain
from memory import AgentMemory, MemoryLevel, TagFilter
from memory.access import provision_agent
from memory.sync import SyncMemory

pytestmark = pytest.mark.integration

SEMANTIC = "agent:a1:ltm:semantic"


@pytest.fixture()
def mem(clean_redis: redis.Redis, redis_url: str) -> Iterator[SyncMemory]:
    with SyncMemory.connect(redis_url, "a1", teams=["t1"]) as m:
        yield m


def fake() -> DeterministicFakeEmbedding:
    return DeterministicFakeEmbedding(size=8)


class Exploding(Embeddings):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise RuntimeError("embedding service down")

    def embed_query(self, text: str) -> list[float]:
        raise RuntimeError("embedding service down")


# -- the missing extra ------------------------------------------------------------------


def test_missing_langchain_names_the_extra_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import integrations

    # a fresh import of the adapters, with langchain_core not importable; both put back after
    for name in [n for n in sys.modules if n.startswith("integrations.langchain")]:
        monkeypatch.delitem(sys.modules, name)
        short = name.split(".", 1)[1]
        monkeypatch.setattr(integrations, short, getattr(integrations, short), raising=False)
    for name in [n for n in sys.modules if n.startswith("langchain_core.")]:
        monkeypatch.delitem(sys.modules, name)  # a loaded submodule would be found as is
    monkeypatch.setitem(sys.modules, "langchain_core", None)  # import finds nothing
    with pytest.raises(ImportError) as ei:
        importlib.import_module("integrations.langchain")
    msg = str(ei.value)
    assert msg == MISSING_LANGCHAIN
    assert "\n" not in msg and "pip install 'reactive-blackboard[langchain]'" in msg


def test_another_import_failure_is_not_reported_as_the_missing_extra() -> None:
    other = ImportError("No module named 'numpy'", name="numpy")
    assert missing_langchain(other) is other
    inner = ImportError("x", name="langchain_core.vectorstores")
    assert str(missing_langchain(inner)) == MISSING_LANGCHAIN


# -- the retriever ------------------------------------------------------------------------


def test_retriever_documents_carry_entry_scope_and_scores(mem: SyncMemory) -> None:
    e = mem.store("Acme pays on net-30 payment terms", level=MemoryLevel.SEMANTIC,
                  tags={"fact", "acme"}, metadata={"src": "crm"})
    mem.store("Globex wants a payment plan", level=MemoryLevel.WORKING, tags={"fact"})
    mem.store("Acme payment was late", level=MemoryLevel.SEMANTIC, tags={"incident"})
    r = BlackboardRetriever(memory=mem, k=5, levels=["semantic"],
                            tag_filter=TagFilter(all_of={"fact"}))
    docs = r.invoke("payment terms")
    assert [d.id for d in docs] == [e.id]
    md = docs[0].metadata
    assert docs[0].page_content == "Acme pays on net-30 payment terms"
    assert (md["entry_id"], md["scope"], md["tags"]) == (e.id, SEMANTIC, ["acme", "fact"])
    assert md["metadata"] == {"src": "crm"}
    for c in ("score", "dense", "bm25", "fused", "strength", "recency", "importance"):
        assert c in md
    assert md["bm25"] > 0 and 0 <= md["fused"] <= 1
    # per call: other levels, k, tags
    assert len(r.invoke("payment", levels=["semantic", "working"], k=2)) == 2
    both = r.invoke("payment", levels=["semantic", "working"], tag_filter={"any_of": ["fact"]})
    assert {d.metadata["scope"] for d in both} == {SEMANTIC, "agent:a1:working"}


@pytest.mark.parametrize(("params", "error", "says"), [
    ({"k": 0}, ValueError, "k must be a positive integer"),
    ({"k": -3}, ValueError, "k must be a positive integer"),
    ({"scopes": ["agent:a1:bogus"]}, ValueError, "is not a memory scope"),
    ({"scopes": ["agent:a2:working"]}, AccessDenied, "may not read scope 'agent:a2:working'"),
    ({"levels": ["dreams"]}, ValueError, "unknown memory level 'dreams'"),
    ({"scopes": ["collective"], "levels": ["working"]}, ValueError, "no scope"),
])
def test_retriever_refuses_bad_fields(mem: SyncMemory, params: dict[str, object],
                                      error: type[Exception], says: str) -> None:
    with pytest.raises(error, match=says):
        BlackboardRetriever(memory=mem, **params)


def test_retriever_refuses_bad_call_arguments(mem: SyncMemory) -> None:
    r = BlackboardRetriever(memory=mem)
    with pytest.raises(InvalidArgument, match="k must be a positive integer"):
        r.invoke("x", k=0)
    with pytest.raises(AccessDenied):
        r.invoke("x", scopes=["team:t2"])
    with pytest.raises(InvalidArgument, match="unknown retriever arguments"):
        r.invoke("x", top_k=3)
    with pytest.raises(InvalidArgument, match="non-empty"):
        r.invoke("   ")
    with pytest.raises(ValueError, match="AgentMemory or a SyncMemory"):
        BlackboardRetriever(memory="redis://localhost")


async def test_async_use_with_an_agent_memory(bb: Blackboard) -> None:
    async with AgentMemory(bb, "a1") as am:
        await am.store("the deploy failed on step three", level=MemoryLevel.SEMANTIC)
        r = BlackboardRetriever(memory=am, levels=["semantic"])
        docs = await r.ainvoke("deploy failed")
        assert [d.page_content for d in docs] == ["the deploy failed on step three"]
        with pytest.raises(RuntimeError, match="SyncMemory"):
            r.invoke("deploy")  # a blocking call cannot drive this loop's connection
        store = BlackboardVectorStore(am, fake())
        assert await store.aadd_texts(["alpha"], ids=["x"]) == ["x"]
        assert [d.id for d in await store.aget_by_ids(["x"])] == ["x"]
        assert await store.asimilarity_search_by_vector(fake().embed_query("alpha"), k=1) == [
            Document(id="x", page_content="alpha")]
        assert await store.adelete(["x"]) and await store.aget_by_ids(["x"]) == []


# -- the vector store ---------------------------------------------------------------------


def test_store_keeps_documents_in_the_scope_and_finds_others_entries(mem: SyncMemory) -> None:
    store = BlackboardVectorStore(mem, fake())
    ids = store.add_texts(["net-30 terms", "wire transfer"], [{"n": 1}, {"n": 2}],
                          ids=["t", "w"])
    assert ids == ["t", "w"]
    assert store.scope_id == SEMANTIC  # by default, the agent's semantic memory
    other = mem.store("written without the store", level=MemoryLevel.SEMANTIC)
    found = store.similarity_search_with_score("written without the store", k=1)
    assert found[0][0] == Document(id=other.id, page_content="written without the store")
    assert found[0][1] == pytest.approx(1.0)
    assert store.get_by_ids([other.id, "t"])[0].id == other.id
    assert store.similarity_search("net-30 terms", k=3, filter={"n": 2}) == [
        Document(id="w", page_content="wire transfer", metadata={"n": 2})]
    rel = store.similarity_search_with_relevance_scores("net-30 terms", k=1)
    assert rel[0][0].id == "t" and rel[0][1] == pytest.approx(1.0)
    assert store.as_retriever(search_kwargs={"k": 1}).invoke("wire transfer")[0].id == "w"


def test_store_without_embeddings_searches_by_recall(mem: SyncMemory) -> None:
    store = BlackboardVectorStore.from_texts(
        ["Acme pays on net-30 terms", "Globex pays by wire"], None, [{"c": "acme"}, {}],
        ids=["acme", "globex"], memory=mem, level="working")
    assert store.scope_id == "agent:a1:working"
    docs = store.similarity_search("net-30", k=2)
    assert docs == [Document(id="acme", page_content="Acme pays on net-30 terms",
                             metadata={"c": "acme"})]
    with pytest.raises(InvalidArgument, match="needs the store's Embeddings"):
        store.similarity_search_by_vector([0.1, 0.2], k=1)
    with pytest.raises(InvalidArgument, match="non-empty query"):
        store.similarity_search("  ", k=1)
    with pytest.raises(InvalidArgument, match="query must be a string"):
        store.similarity_search(None, k=1)  # type: ignore[arg-type]


def test_team_store(mem: SyncMemory) -> None:
    store = BlackboardVectorStore(mem, fake(), team="t1", level="working")
    store.add_texts(["shared runbook"], ids=["rb"])
    assert store.scope_id == "team:t1:working"
    assert store.get_by_ids(["rb"])[0].page_content == "shared runbook"


@pytest.mark.parametrize(("kwargs", "error", "says"), [
    ({"scope": "agent:a2:ltm:semantic"}, AccessDenied, "may not write scope"),
    ({"scope": "collective"}, AccessDenied, "may not write scope 'collective'"),
    ({"scope": "agent:a1:bogus"}, InvalidScope, "not a memory scope"),
    ({"team": "t9"}, AccessDenied, "may not write"),
    ({"level": "dreams"}, ValueError, "dreams"),
])
def test_store_refuses_scopes_it_may_not_write(mem: SyncMemory, kwargs: dict[str, str],
                                               error: type[Exception], says: str) -> None:
    with pytest.raises(error, match=says):
        BlackboardVectorStore(mem, fake(), **kwargs)  # type: ignore[arg-type]


def test_bad_input_writes_nothing(mem: SyncMemory) -> None:
    store = BlackboardVectorStore(mem, fake())

    def count() -> int:
        return int(mem.stats()[SEMANTIC].count)

    bad: list[tuple[dict[str, object], type[Exception], str]] = [
        ({"ids": ["a"]}, InvalidArgument, "1 ids for 2 texts"),
        ({"metadatas": [{}]}, InvalidArgument, "1 metadatas for 2 texts"),
        ({"ids": ["a", "a"]}, InvalidArgument, "ids repeated"),
        ({"ids": ["a", ""]}, InvalidArgument, "key must be 1 to"),
        ({"ids": ["a", "b"], "metadatas": [{}, {"f": object()}]}, InvalidArgument, "metadata"),
    ]
    for kw, error, says in bad:
        with pytest.raises(error, match=says):
            store.add_texts(["one", "two"], **kw)  # type: ignore[arg-type]
        assert count() == 0, kw
    with pytest.raises(RuntimeError, match="embedding service down"):
        BlackboardVectorStore(mem, Exploding()).add_texts(["one", "two"], ids=["a", "b"])
    assert count() == 0
    with pytest.raises(InvalidArgument, match="one string"):
        store.add_texts("one")
    for k in (0, -1, True):
        with pytest.raises(InvalidArgument, match="k must be a positive integer"):
            store.similarity_search("x", k=k)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="never deletes a whole scope"):
        store.delete(None)
    with pytest.raises(InvalidArgument, match="does not take"):
        store.similarity_search("x", k=1, fetch_k=9)
    with pytest.raises(InvalidArgument, match="memory="):
        BlackboardVectorStore.from_texts(["x"], fake())


def test_ids_of_other_scopes_are_not_read(mem: SyncMemory) -> None:
    theirs = mem.store("team secret", level="working", team="t1")
    store = BlackboardVectorStore(mem, fake())
    assert store.get_by_ids([theirs.id]) == []
    assert store.delete([theirs.id]) is True
    assert [d.id for d in BlackboardRetriever(memory=mem).invoke("team secret")] == [
        theirs.id]  # still there


async def test_confined_agent_store_cannot_touch_another_agents_scope(
    bb: Blackboard, redis_url: str
) -> None:
    g = await AclAdmin(bb).grant("a1", rotate=True)
    await provision_agent(bb, "a1")
    await provision_agent(bb, "a2")
    theirs = await bb.scope("agent:a2:ltm:semantic").write({"text": "a2 only"}, key="k2")
    try:
        async with Blackboard.connect(redis_url, username=g.username,
                                      password=g.password) as abb:
            own = BlackboardVectorStore(AgentMemory(abb, "a1"), fake())
            assert await own.aadd_texts(["mine"], ids=["m"]) == ["m"]
            with pytest.raises(AccessDenied):  # our check
                BlackboardVectorStore(AgentMemory(abb, "a1"), fake(),
                                      scope="agent:a2:ltm:semantic")
            # our check bypassed (the memory claims to be a2): Redis refuses every call
            posing = BlackboardVectorStore(AgentMemory(abb, "a2"), fake())
            for call in (posing.aadd_texts(["overwrite"], ids=["k2"]),
                         posing.aget_by_ids(["k2"]), posing.adelete(["k2"]),
                         posing.asimilarity_search("a2", k=1)):
                with pytest.raises(AccessDenied) as ei:
                    await call
                assert ei.value.by_server
        after = await bb.scope("agent:a2:ltm:semantic").get_by_key("k2")
        assert (after.id, after.version, after.value) == (theirs.id, 1, {"text": "a2 only"})
    finally:
        await AclAdmin(bb).revoke("a1")


def test_readme_snippet_runs(clean_redis: redis.Redis, redis_url: str,
                             capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### LangChain (issue 29 item 2)"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    exec(compile(code.group(1).replace("redis://localhost:6379/0", redis_url),
                 "README.md LangChain", "exec"), {})
    out = capsys.readouterr().out
    assert "Acme pays on net-30 payment terms agent:a1:ltm:semantic" in out
    assert "Document(id='rollback'" in out
