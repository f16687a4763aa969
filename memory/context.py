"""Prompt-ready context (issue 27 item 3): what memory holds on a query, as text an LLM
prompt can take within a token budget.

Current beliefs come first, each with a confidence indicator, when it was last supported
and its evidence count (what a model needs to weigh a belief it did not derive); then the
memories, best first, each with a short citation id (``b1``, ``m1``) that
:attr:`Context.citations` maps to the entry. Recall collapses an entry and its derived
copies into one hit (each fact once), so no entry and no statement appears twice. Items
are taken best first while they fit (an item too long for what is left is skipped, a
shorter one after it may still fit); the text is never over the budget.

Tokens are estimated, not counted with a model's tokenizer (the caller's model is not
known here): :func:`retrieval.text.estimate_tokens`, at or above what BPE tokenizers of
English text give, so a context within its estimate is within the model's count too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from blackboard import Entry, InvalidArgument
from retrieval import ScoredEntry
from retrieval.query import MAX_BUDGET_TOKENS
from retrieval.text import TOKEN_RE, entry_text, estimate_tokens, event_time_ms
from retrieval.truth import belief_status, is_belief

__all__ = ["MAX_BUDGET_TOKENS", "Context", "assemble", "estimate_tokens", "validate_budget"]

#: The longest text one memory may take, in tokens (a long entry is cut, marked "…").
ITEM_TOKENS = 400

BELIEFS_HEADER = "Current beliefs (confidence; last supported; evidence):"
MEMORIES_HEADER = "Relevant memories:"


def validate_budget(budget_tokens: object) -> int:
    """``budget_tokens`` as an int in ``[1, MAX_BUDGET_TOKENS]``, else InvalidArgument."""
    if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int):
        raise InvalidArgument(f"budget_tokens must be an integer, got {budget_tokens!r}")
    if not 1 <= budget_tokens <= MAX_BUDGET_TOKENS:
        raise InvalidArgument(
            f"budget_tokens must be between 1 and {MAX_BUDGET_TOKENS}, got {budget_tokens}")
    return budget_tokens


@dataclass(frozen=True, slots=True)
class Context:
    """``text`` (ready to paste into a prompt), ``citations`` (citation id -> entry, in the
    order the text cites them), ``tokens`` (the text's estimate, at most
    ``budget_tokens``), ``left_out`` (relevant hits that did not fit)."""

    text: str
    citations: dict[str, Entry] = field(default_factory=dict)
    tokens: int = 0
    budget_tokens: int = 0
    left_out: int = 0


def _day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def _confidence_word(c: float) -> str:
    return "high" if c >= 0.75 else "medium" if c >= 0.5 else "low"


def _cut(text: str, limit: int) -> str:
    spans = list(TOKEN_RE.finditer(text))
    if len(spans) <= limit and estimate_tokens(text) <= limit:
        return text
    cut = text[: min(spans[limit - 1].end() if len(spans) >= limit else len(text), limit * 4)]
    return cut.rstrip() + "…"


def _belief_line(cid: str, e: Entry) -> tuple[str, str]:
    """A belief's line and its statement."""
    v = e.value if isinstance(e.value, dict) else {}
    m = e.metadata
    said = " ".join(str(v.get("statement") or entry_text(e, main=True)).split())
    conf = m.get("confidence")
    c = float(conf) if isinstance(conf, int | float) else 0.5
    last = m.get("last_supported_ms")
    when = _day(int(last)) if isinstance(last, int | float) else _day(e.created_at)
    n = m.get("source_count")
    ev = n if isinstance(n, int) else len(v.get("evidence") or [])
    return f"- [{cid}] {said} ({_confidence_word(c)} {c:.2f}; {when}; {ev} evidence)", said


def _memory_line(cid: str, e: Entry) -> tuple[str, str]:
    """A memory's line (its day, who said it, its main text) and that text."""
    v = e.value if isinstance(e.value, dict) else {}
    if v.get("kind") == "message":
        who = v.get("speaker")
        body = str(v.get("text", ""))
        head = f"{who}: " if isinstance(who, str) and who else ""
    else:
        body, head = entry_text(e, main=True), ""
    text = _cut(" ".join(body.split()), ITEM_TOKENS)
    return f"- [{cid}] {_day(event_time_ms(e))} {head}{text}", text


def _is_current_belief(e: Entry) -> bool:
    return is_belief(e) and belief_status(e) == "active"


def assemble(hits: Sequence[ScoredEntry], budget_tokens: int) -> Context:
    """The context of ``hits`` (recall's, best first) within ``budget_tokens``."""
    sections = (
        (BELIEFS_HEADER, "b", _belief_line,
         [h.entry for h in hits if _is_current_belief(h.entry)]),
        (MEMORIES_HEADER, "m", _memory_line, [h.entry for h in hits if not is_belief(h.entry)]),
    )
    lines: list[str] = []
    cites: dict[str, Entry] = {}
    said: set[str] = set()
    used = left_out = 0
    for header, prefix, render, entries in sections:
        body: list[str] = []
        head = estimate_tokens(header) + 1  # + its newline, paid with the first item
        for e in entries:
            line, text = render(f"{prefix}{len(body) + 1}", e)
            if text.casefold() in said:
                continue  # the same statement from another entry: said once
            need = estimate_tokens(line) + 1 + (0 if body else head)
            if used + need > budget_tokens:
                left_out += 1
                continue
            body.append(line)
            cites[f"{prefix}{len(body)}"] = e
            said.add(text.casefold())
            used += need
        if body:
            lines += [header, *body]
    text = "\n".join(lines)
    return Context(text, cites, estimate_tokens(text) if text else 0, budget_tokens, left_out)
