"""LangChain on the blackboard: a retriever over an agent's recall and a vector store kept
in one of its scopes (``pip install 'reactive-blackboard[langchain]'``).

::

    from integrations.langchain import BlackboardRetriever, BlackboardVectorStore
    from memory.sync import SyncMemory

    with SyncMemory.connect("redis://localhost:6379/0", "a1") as mem:
        store = BlackboardVectorStore(mem)                 # the agent's ltm:semantic
        store.add_texts(["Acme pays in 30 days"], ids=["acme-terms"])
        docs = BlackboardRetriever(memory=mem, k=3).invoke("payment terms")

Importing this module without langchain-core raises an ImportError naming that extra.
See :mod:`integrations.langchain_retriever` and :mod:`integrations.langchain_vectorstore`.
"""

from __future__ import annotations

from .langchain_retriever import BlackboardRetriever, hit_document
from .langchain_vectorstore import BlackboardVectorStore

__all__ = ["BlackboardRetriever", "BlackboardVectorStore", "hit_document"]
