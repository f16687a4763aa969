"""Errors of the memory layer (all :class:`blackboard.BlackboardError` subclasses)."""

from __future__ import annotations

from blackboard import BlackboardError, InvalidArgument

__all__ = ["EdgeCycle", "InvalidEdge", "SemanticRecallUnavailable"]


class SemanticRecallUnavailable(BlackboardError, NotImplementedError):
    """Free-text recall needs a retriever (the retrieval layer); none is configured.

    Tag, time and key queries work without one (:class:`memory.BasicQuery`).
    """


class InvalidEdge(InvalidArgument):
    """A dataflow edge is malformed: unknown transformer, unbindable target, bad pattern."""


class EdgeCycle(InvalidEdge):
    """Adding the edge would close a cycle in the dataflow graph."""
