"""Errors of the memory layer (all :class:`blackboard.BlackboardError` subclasses)."""

from __future__ import annotations

from blackboard import BlackboardError, InvalidArgument, VersionConflict

__all__ = ["EdgeCycle", "EdgeVersionConflict", "InvalidClaim", "InvalidEdge", "NotABelief",
           "SemanticRecallUnavailable"]


class SemanticRecallUnavailable(BlackboardError, NotImplementedError):
    """Recall by relevance needs a retriever (the retrieval layer); none is configured.

    Tag, time and key queries work without one (``MemoryQuery(order="newest")``).
    """


class InvalidEdge(InvalidArgument):
    """A dataflow edge is malformed: unknown transformer, unbindable target, bad pattern."""


class EdgeCycle(InvalidEdge):
    """Adding the edge would close a cycle in the dataflow graph."""


class EdgeVersionConflict(VersionConflict):
    """A compare-and-set edge update found another version than the one expected."""

    def __init__(self, edge_id: str, expected: int, actual: int) -> None:
        super().__init__(edge_id, expected, actual)
        self.args = (f"edge {edge_id} is at version {actual}, not the expected {expected}",)
        self.edge_id = edge_id


class NotABelief(InvalidArgument):
    """``confirm`` / ``correct`` named an entry that is not a belief (or an id that names
    no entry at all by its form): over HTTP a 422 naming ``belief_id``."""


class InvalidClaim(InvalidArgument):
    """A correction's claim is empty, too long, or about another subject or predicate
    than the belief it corrects: over HTTP a 422 naming ``claim``."""
