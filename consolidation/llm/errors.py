"""Errors of the LLM path. Each is a reason a batch goes to the DLQ, never silently lost."""

from __future__ import annotations

from ..errors import ConsolidationError

__all__ = ["BudgetExceeded", "InvalidLLMOutput", "LLMError", "LLMUnavailable"]


class LLMError(ConsolidationError):
    """Base of every LLM-path failure; ``reason`` is a short text fit for a DLQ record."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class InvalidLLMOutput(LLMError):
    """The model's output stayed invalid (not JSON, or not the schema) after repair."""


class BudgetExceeded(LLMError):
    """The client's token budget (prompt + completion tokens) is spent."""

    def __init__(self, used: int, limit: int) -> None:
        super().__init__(f"token budget exceeded: {used} of {limit} tokens used")
        self.used = used
        self.limit = limit


class LLMUnavailable(LLMError):
    """The endpoint kept failing (429, 5xx, timeouts, connection errors) past the retries,
    or answered with a non-retryable HTTP error."""
