"""The transformers' LLM client of a worker process, from its settings."""

from __future__ import annotations

from consolidation.llm.openai import OpenAIClient

from .settings import WorkerSettings

__all__ = ["transformer_llm"]


def transformer_llm(settings: WorkerSettings, role: str | None = None) -> OpenAIClient | None:
    """An OpenAI-compatible client when an endpoint is configured (and, given the worker
    ``role``, the LLM is on for it: ``llm_roles``), else None: the transformers then run
    their LLM-free paths."""
    if settings.llm_base_url is None or settings.llm_model is None:
        return None
    if role is not None and role not in settings.llm_role_set():
        return None
    return OpenAIClient(
        settings.llm_base_url,
        settings.llm_model,
        api_key=settings.llm_api_key,
        rate=settings.llm_rate,
        token_budget=settings.llm_token_budget,
        max_tokens=settings.llm_max_tokens,
    )
