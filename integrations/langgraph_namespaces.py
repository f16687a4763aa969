"""The namespaces of a LangGraph store's items, per scope (:class:`NamespaceIndex`): which
namespaces a scope holds, read from its tag indexes, and when each got its first item.

A namespace's tag (:func:`integrations.store_paths.namespace_tag`) is a hash of the
namespace, so the tag -> namespace map cached here is never stale; this module imports
nothing of LangGraph.
"""

from __future__ import annotations

from blackboard.ids import new_ulid
from memory import AgentMemory

from . import store_paths as paths

__all__ = ["NamespaceIndex"]


class NamespaceIndex:
    """The namespaces of the items in the scopes ``memory`` reaches, cached per process."""

    def __init__(self, memory: AgentMemory) -> None:
        self.memory = memory
        #: namespace tag -> namespace (a tag is a hash of its namespace: never stale)
        self._namespaces: dict[str, paths.Namespace] = {}
        #: namespace tag -> when it got its first item (see since)
        self._since_of: dict[str, str] = {}

    async def since(self, sid: str, namespace: paths.Namespace) -> str:
        """When the namespace got its first item (a ULID: sorts by time, then by order of
        the calls in this process), kept with each item: a search lists namespaces in
        that order, as InMemoryStore (whose dict keeps each namespace where it came)."""
        tag = paths.namespace_tag(namespace)
        since = self._since_of.get(tag)
        if since is None:
            held = [e.metadata.get("ns_since") for e in
                    await self.memory.bb.scope(sid).entries(all_of=[tag], limit=5)]
            since = min((x for x in held if isinstance(x, str)), default=None) or new_ulid()
            self._since_of[tag] = since
        return since

    async def of_scope(self, sid: str) -> dict[str, paths.Namespace]:
        """{namespace tag: namespace} of the namespaces with live items in scope ``sid``
        (O(tags) from the counter hash; one read per namespace never seen before)."""
        scope = self.memory.bb.scope(sid)
        out = {}
        for tag in await scope.tags():
            if not tag.startswith(paths.NS_TAG_PREFIX):
                continue
            ns = self._namespaces.get(tag)
            if ns is None:
                for e in await scope.entries(all_of=[tag], limit=5):
                    found = paths.unwrap(e.key, e.value)
                    if found is not None and paths.namespace_tag(found[0]) == tag:
                        ns = self._namespaces[tag] = found[0]
                        break
            if ns is not None:
                out[tag] = ns
        return out
