"""An OpenAI-compatible chat-completions client with validated JSON output."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any, Literal, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from .errors import InvalidLLMOutput, LLMUnavailable
from .limits import RateLimiter, TokenBudget

__all__ = ["OpenAIClient"]

M = TypeVar("M", bound=BaseModel)
ResponseFormat = Literal["json_schema", "json_object", "none"]
_RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class OpenAIClient:
    """``POST {base_url}/chat/completions`` with structured output.

    Output handling: the reply's content must be JSON valid against ``schema``; when it is
    not, one repair round sends the error back to the model; still invalid raises
    :class:`InvalidLLMOutput` with the reason. Transport handling: 429, 5xx, timeouts and
    connection errors are retried up to ``max_retries`` times with exponential backoff
    (``backoff * 2**attempt`` seconds, jittered, or ``Retry-After`` when the server sends
    it, capped at ``max_backoff``), then :class:`LLMUnavailable`. Every request waits for
    the rate limiter (``rate`` requests/s) and is charged to the token budget
    (``token_budget`` prompt + completion tokens, from ``usage``).

    ``base_url`` includes the version prefix, e.g. ``http://127.0.0.1:8000/v1``.
    ``timeout`` is seconds per request. ``max_tokens`` caps each reply (sent as
    ``max_tokens``; None sends none: the server's default); a reply cut by it is invalid
    output like any other, repaired once, then :class:`InvalidLLMOutput`.

    ``response_format="json_schema"`` sends the schema the reply must match as OpenAI's
    ``{"type": "json_schema", "json_schema": {"name", "schema"}}``, which llama.cpp's
    server, vLLM and Ollama turn into a grammar constraining the model while it writes;
    ``"json_object"`` asks only for JSON, ``"none"`` for nothing (the schema is always in
    the system prompt too, for a server that ignores ``response_format``).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        rate: float | None = None,
        token_budget: int | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        response_format: ResponseFormat = "json_schema",
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self._model = model
        self._url = base_url.rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = http or httpx.AsyncClient(timeout=timeout, headers=headers)
        self._owns_http = http is None
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.response_format = response_format
        self.limiter = RateLimiter(rate)
        self.budget = TokenBudget(token_budget)
        self.requests = 0  # HTTP requests sent, retries included

    @property
    def model(self) -> str:
        return self._model

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> OpenAIClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def complete_json(self, system: str, user: str, schema: type[M]) -> M:
        messages: list[dict[str, str]] = [
            {"role": "system", "content": system + "\n\n" + _schema_hint(schema)},
            {"role": "user", "content": user},
        ]
        content, cut = await self._chat(messages, schema)
        try:
            return _parse(content, cut, schema)
        except _Invalid as first:
            # The one repair round: the model sees its reply and what is wrong with it.
            messages += [
                {"role": "assistant", "content": content},
                {
                    "role": "user",
                    "content": "Your reply was invalid: "
                    + first.reason
                    + "\nReply again with only a JSON object that matches the schema.",
                },
            ]
        content, cut = await self._chat(messages, schema)
        try:
            return _parse(content, cut, schema)
        except _Invalid as second:
            raise InvalidLLMOutput(f"invalid output after repair: {second.reason}") from None

    async def _chat(
        self, messages: list[dict[str, str]], schema: type[BaseModel]
    ) -> tuple[str, bool]:
        """The reply's content, and whether the server cut it at ``max_tokens``."""
        body: dict[str, Any] = {
            "model": self._model,
            "messages": messages,
            "temperature": self.temperature,
        }
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.response_format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()},
            }
        elif self.response_format == "json_object":
            body["response_format"] = {"type": "json_object"}
        # A rough estimate (4 characters a token) refuses calls that cannot fit at all.
        self.budget.check(sum(len(m["content"]) for m in messages) // 4)
        last = "no attempt"
        for attempt in range(self.max_retries + 1):
            await self.limiter.acquire()
            self.requests += 1
            delay: float | None = None
            try:
                resp = await self._http.post(self._url, json=body)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if resp.status_code == 200:
                    return self._content(resp)
                last = f"HTTP {resp.status_code}: {resp.text[:200]}"
                if resp.status_code not in _RETRY_STATUS:
                    raise LLMUnavailable(last)
                delay = _retry_after(resp)
            if attempt == self.max_retries:
                break
            if delay is None:
                delay = self.backoff * 2**attempt * (0.5 + random.random() / 2)
            await asyncio.sleep(min(delay, self.max_backoff))
        raise LLMUnavailable(f"gave up after {self.max_retries + 1} attempts: {last}")

    def _content(self, resp: httpx.Response) -> tuple[str, bool]:
        try:
            data = resp.json()
        except ValueError:
            raise LLMUnavailable(f"response is not JSON: {resp.text[:200]}") from None
        usage = data.get("usage") or {}
        total = usage.get("total_tokens")
        if total is None:
            total = int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
        self.budget.spend(int(total))
        try:
            choice = data["choices"][0]
            content = choice["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise InvalidLLMOutput("response has no choices[0].message.content") from None
        text = content if isinstance(content, str) else json.dumps(content)
        return text, choice.get("finish_reason") == "length"


class _Invalid(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _parse(content: str, cut: bool, schema: type[M]) -> M:
    text = _strip_fence(content)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # A reply cut at max_tokens is rarely valid: the reason says why, for the repair
        # round (write less) and the DLQ record (raise the limit).
        why = "cut off at max_tokens, " if cut else ""
        raise _Invalid(
            f"not JSON ({why}{exc.msg} at line {exc.lineno} col {exc.colno})"
        ) from None
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        errs = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors()
        )
        raise _Invalid(f"does not match schema {schema.__name__}: {errs}"[:1000]) from None


def _strip_fence(content: str) -> str:
    # Models often wrap JSON in a Markdown fence even when asked not to.
    t = content.strip()
    if t.startswith("```"):
        t = t.split("\n", 1)[1] if "\n" in t else ""
        if t.rstrip().endswith("```"):
            t = t.rstrip()[:-3]
    return t.strip()


def _schema_hint(schema: type[BaseModel]) -> str:
    return "Reply with only a JSON object matching this JSON Schema:\n" + json.dumps(
        schema.model_json_schema(), separators=(",", ":")
    )


def _retry_after(resp: httpx.Response) -> float | None:
    v = resp.headers.get("retry-after")
    if v is None:
        return None
    try:
        return max(0.0, float(v))
    except ValueError:
        return None
