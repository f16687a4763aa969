"""The ``timeline`` role: keeps the tables of contents of the scopes its edges name
(:mod:`consolidation.toc`), from the events, with the edge runner's machinery: partition
leases, buffering and acking in one script, a durable in-flight batch, the DLQ. Its
firing places the batch's entries (``toc.lua``: placements and nodes in one
compare-and-set call) instead of writing drafts, so a replay after a crash finds them
placed and changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from blackboard import Blackboard, Entry, WriteRequest
from consolidation.toc import apply_entries, timeline
from memory.subscriptions import MemorySubscription

from .consolidation import EdgeRunnerRole
from .registry import RoleHost, RoleSpec

__all__ = ["SPECS", "TocBridge"]


@dataclass
class TocBridge:
    """The edge runner's transform step for ``timeline`` edges: place the entries in their
    own scope's table (an edge's target only names the buffer); writes no entries."""

    bb: Blackboard

    async def __call__(self, edge: MemorySubscription, target: str, entries: list[Entry],
                       now_ms: int) -> list[WriteRequest]:
        by_scope: dict[str, list[Entry]] = {}
        for e in entries:
            by_scope.setdefault(e.scope, []).append(e)
        for scope, es in sorted(by_scope.items()):
            await apply_entries(self.bb, scope, es)
        return []


def _factory() -> Callable[[RoleHost], EdgeRunnerRole]:
    names = frozenset({timeline.name})
    return lambda host: EdgeRunnerRole(host, names, bridge=TocBridge(host.bb))  # type: ignore[arg-type]


SPECS: tuple[RoleSpec, ...] = (
    RoleSpec("timeline", _factory(), consumes=True, transformers=frozenset({timeline.name})),
)
