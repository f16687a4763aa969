"""The base of consolidation's errors, so they sit in the one error tree under
:class:`blackboard.BlackboardError` (drawn in :mod:`blackboard.errors`)."""

from __future__ import annotations

from blackboard import BlackboardError

__all__ = ["ConsolidationError"]


class ConsolidationError(BlackboardError):
    """Base of every consolidation failure: unknown transformer, bad edge parameters, the
    LLM path's (:class:`~consolidation.llm.errors.LLMError`)."""
