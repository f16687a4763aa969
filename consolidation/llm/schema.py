"""Per-call output schemas: a transformer's output model narrowed to what one batch allows.

The client sends the schema as ``response_format`` (``json_schema``); llama.cpp, vLLM and
Ollama compile it into a grammar the sampler must follow. Bounds in the schema (entry
indexes within the batch, at most so many items, strings of at most so many characters)
therefore bind the model while it writes, so even a small model's output is valid and
ends -- provided the server's reply cap (``max_tokens``, or its own ``n_predict``) is
above the schema's worst case, which for a ~22-entry batch it may not be: a looping model
fills every item and character the schema allows, and a reply cut at the cap is invalid
(README, "With the small real model"). The same bounds reject an out-of-range reply of a
server that ignores them.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

from pydantic import BaseModel, create_model

__all__ = ["CHARS_PER_TOKEN", "narrowed"]

M = TypeVar("M", bound=BaseModel)

#: Characters allowed per token of a budget (consolidation.text's tokens average about
#: five characters with their space): loose, as the text is cut to its budget after.
CHARS_PER_TOKEN = 8


def narrowed(model: type[M], **fields: Any) -> type[M]:
    """A subclass of ``model`` under the same name (its schema's title) with ``fields``
    redefined, each as ``name=(type, Field(...))``: instances are still ``model``'s."""
    return cast("type[M]", create_model(model.__name__, __base__=model, **fields))
