"""LangChain's own standard suites (``langchain-tests``) on our retriever and vector store,
on a real Redis. Each test gets an emptied database and its own SyncMemory (its loop in a
thread), so the suites' sync and async tests both run against it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from langchain_tests.integration_tests import (
    RetrieversIntegrationTests,
    VectorStoreIntegrationTests,
)

from integrations.langchain import BlackboardRetriever, BlackboardVectorStore
from memory import MemoryLevel
from memory.sync import SyncMemory

pytestmark = pytest.mark.integration

FACTS = [
    "Acme pays its invoices on net-30 payment terms",
    "Globex asked for a payment plan over six months",
    "Initech's payment failed twice in March",
    "The payment portal moves to a new domain in May",
    "Umbrella settles every payment by wire transfer",
]


class TestBlackboardRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _memory(self, clean_redis: redis.Redis, redis_url: str) -> Iterator[None]:
        with SyncMemory.connect(redis_url, "a1", teams=["t1"]) as mem:
            for f in FACTS:
                mem.store(f, level=MemoryLevel.SEMANTIC, tags={"fact"})
            self.mem = mem
            yield

    @property
    def retriever_constructor(self) -> type[BlackboardRetriever]:
        return BlackboardRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": self.mem, "levels": ["semantic"]}

    @property
    def retriever_query_example(self) -> str:
        return "payment terms"


class TestBlackboardVectorStoreStandard(VectorStoreIntegrationTests):
    @pytest.fixture()
    def vectorstore(self, clean_redis: redis.Redis,
                    redis_url: str) -> Iterator[BlackboardVectorStore]:
        with SyncMemory.connect(redis_url, "a1") as mem:
            yield BlackboardVectorStore(mem, self.get_embeddings())
