"""The protocol every LLM client implements."""

from __future__ import annotations

from typing import Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

__all__ = ["LLMClient"]

M = TypeVar("M", bound=BaseModel)


@runtime_checkable
class LLMClient(Protocol):
    """Structured completion. ``model`` is recorded in the provenance of drafts.

    ``complete_json`` returns an instance of ``schema`` or raises an
    :class:`~consolidation.llm.errors.LLMError` (invalid output, budget, unavailable).
    """

    @property
    def model(self) -> str: ...

    async def complete_json(self, system: str, user: str, schema: type[M]) -> M: ...
