"""The LLM path of consolidation: a client protocol and an OpenAI-compatible client."""

from __future__ import annotations

from .errors import BudgetExceeded, InvalidLLMOutput, LLMError, LLMUnavailable
from .limits import RateLimiter, TokenBudget
from .openai import OpenAIClient
from .protocol import LLMClient

__all__ = [
    "BudgetExceeded",
    "InvalidLLMOutput",
    "LLMClient",
    "LLMError",
    "LLMUnavailable",
    "OpenAIClient",
    "RateLimiter",
    "TokenBudget",
]
