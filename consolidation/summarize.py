"""``summarize`` (working -> stm): what a batch of working memory amounts to, in a budget.

LLM-free path: the batch's steps are rolled up, a line per task (:mod:`.rollup`: its
steps, its outcome, where it failed); the other entries' sentences (facts stated, free
text) are ranked by LexRank-style centrality (PageRank
over the cosine-similarity graph of TF-IDF vectors, or of ``ctx.similarity`` embeddings
when given), then chosen greedily best first while they fit the token budget and are not
redundant with a chosen sentence; the chosen ones are emitted in chronological order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
from pydantic import BaseModel, Field

from blackboard import Entry

from .draft import Draft
from .llm.schema import CHARS_PER_TOKEN, narrowed
from .params import parse_params
from .prompt import render_batch
from .rollup import fit, rollups
from .signals import chronological, occurred_at
from .text import (
    count_tokens,
    entry_text,
    l2_normalise,
    normalise_text,
    split_sentences,
    tfidf_matrix,
    truncate_tokens,
    union_tags,
)
from .transformer import Similarity, TransformContext, identity, register_transformer

__all__ = ["SummarizeParams", "Summarizer", "lexrank", "select_sentences", "summarize"]


@dataclass(frozen=True, slots=True)
class SummarizeParams:
    """``budget``: tokens of the summary (see :mod:`consolidation.text`); ``redundancy``:
    a sentence whose cosine to a chosen one is >= this is skipped; ``damping`` of the
    PageRank walk."""

    budget: int = 200
    redundancy: float = 0.8
    damping: float = 0.85

    def __post_init__(self) -> None:
        if self.budget < 1:
            raise ValueError("budget must be >= 1 token")
        if not 0.0 < self.redundancy <= 1.0:
            raise ValueError("redundancy must be in (0, 1]")
        if not 0.0 < self.damping < 1.0:
            raise ValueError("damping must be in (0, 1)")


def lexrank(sim: np.ndarray, damping: float = 0.85, tol: float = 1e-12) -> np.ndarray:
    """Centrality of each node of a similarity graph, shape ``(n,)``, summing to 1.

    ``sim`` is ``(n, n)`` cosine similarities; negatives and self-loops are ignored and a
    row with no edge walks uniformly. Power iteration to ``tol`` (at most 1000 steps).
    """
    n = sim.shape[0]
    if n == 0:
        return np.zeros(0)
    w = np.clip(np.asarray(sim, dtype=np.float64), 0.0, None)
    np.fill_diagonal(w, 0.0)
    rows = w.sum(axis=1, keepdims=True)
    m = np.where(rows > 0, w / np.where(rows > 0, rows, 1.0), 1.0 / n)
    p = np.full(n, 1.0 / n)
    for _ in range(1000):
        nxt = (1.0 - damping) / n + damping * (m.T @ p)
        if np.abs(nxt - p).sum() < tol:
            return nxt
        p = nxt
    return p


def select_sentences(
    sentences: Sequence[str],
    sim: np.ndarray,
    params: SummarizeParams,
) -> list[int]:
    """Indices of the chosen sentences, ascending (``sentences`` are in chronological
    order). Ties in centrality go to the earlier sentence. When even the best sentence
    exceeds the budget nothing is chosen (the caller truncates it)."""
    scores = lexrank(sim, params.damping)
    order = sorted(range(len(sentences)), key=lambda i: (-round(float(scores[i]), 12), i))
    chosen: list[int] = []
    used = 0
    for i in order:
        t = count_tokens(sentences[i])
        if used + t > params.budget:
            continue
        if any(sim[i, j] >= params.redundancy for j in chosen):
            continue
        chosen.append(i)
        used += t
    return sorted(chosen)


def _sentences(entries: Sequence[Entry]) -> list[str]:
    seen: set[str] = set()
    out = []
    for e in entries:
        for s in split_sentences(entry_text(e)):
            k = normalise_text(s)
            if k and k not in seen:  # repeated sentences would only vote for themselves
                seen.add(k)
                out.append(s)
    return out


def _similarity(sentences: list[str], similarity: Similarity | None) -> np.ndarray:
    if similarity is None:
        v = tfidf_matrix(sentences)
    else:
        v = l2_normalise(np.asarray(similarity(sentences), dtype=np.float64))
    return v @ v.T


def extractive_summary(
    entries: Sequence[Entry], params: SummarizeParams, similarity: Similarity | None = None
) -> list[str]:
    """The chosen sentences of chronologically ordered ``entries``, in order."""
    sentences = _sentences(entries)
    if not sentences:
        return []
    sim = _similarity(sentences, similarity)
    chosen = select_sentences(sentences, sim, params)
    if not chosen:
        best = int(np.argmax(lexrank(sim, params.damping)))
        return [truncate_tokens(sentences[best], params.budget)]
    return [sentences[i] for i in chosen]


def _rolled_up(
    es: Sequence[Entry], params: SummarizeParams, similarity: Similarity | None
) -> tuple[list[str], str]:
    """The LLM-free summary: a line per task (:mod:`.rollup`), then the chosen sentences
    of everything else (facts stated, free text), within the budget; and its method. The
    free text keeps at least half the budget when the tasks' short lines need more."""
    tasks, rest = rollups(es)
    short = sum(count_tokens(t.line(with_steps=False)) for t in tasks)
    room = max(1, params.budget - min(short, params.budget // 2))
    kept = extractive_summary(rest, replace(params, budget=room), similarity) if rest else []
    lines = fit(tasks, params.budget - sum(count_tokens(s) for s in kept))
    method = "lexrank-embedding" if similarity else "lexrank-tfidf"
    return [*lines, *kept], ("rollup+" + method if tasks else method)


class SummaryOut(BaseModel):
    """LLM output of ``summarize``."""

    summary: str = Field(description="A faithful summary of the entries, plain prose.")


@lru_cache(maxsize=64)
def summary_out(budget: int) -> type[SummaryOut]:
    """:class:`SummaryOut` within ``budget`` tokens (the summary is cut to them after; see
    :mod:`consolidation.llm.schema`)."""
    return narrowed(
        SummaryOut,
        summary=(str, Field(min_length=1, max_length=budget * CHARS_PER_TOKEN,
                            description="A faithful summary of the entries, plain prose.")),
    )


_SYSTEM = (
    "You condense an AI agent's working memory into a short-term memory note. Keep facts, "
    "decisions, results and open problems; drop chatter. Never invent anything."
)


class Summarizer:
    name = "summarize"
    version = "2"  # 2: tasks rolled up

    async def __call__(self, batch: Sequence[Entry], ctx: TransformContext) -> list[Draft]:
        params = parse_params(SummarizeParams, ctx.params, self.name)
        es = chronological({e.id: e for e in batch}.values())
        if not es:
            return []
        model = None
        if ctx.llm is not None:
            user = (
                f"Summarize in at most {params.budget} tokens (about "
                f"{params.budget * 3 // 4} words):\n\n{render_batch(es)}"
            )
            out = await ctx.llm.complete_json(_SYSTEM, user, summary_out(params.budget))
            text = truncate_tokens(" ".join(out.summary.split()), params.budget)
            sentences = split_sentences(text)
            model, method = ctx.llm.model, "llm"
        else:
            sentences, method = _rolled_up(es, params, ctx.similarity)
            text = " ".join(sentences)
        start, end = occurred_at(es[0]), occurred_at(es[-1])
        value = {
            "text": text,
            "sentences": sentences,
            "start_ms": start,
            "end_ms": end,
            "entries": len(es),
        }
        meta = {
            "kind": "summary",
            "method": method,
            "start_ms": start,
            "end_ms": end,
            "tokens": count_tokens(text),
            "budget": params.budget,
        }
        return [
            Draft(
                value=value,
                provenance=ctx.provenance(self, [e.id for e in es], model),
                tags=union_tags((e.tags for e in es), ["summary"]),
                metadata=meta,
                importance=max(e.importance for e in es),
            )
        ]


summarize = register_transformer(Summarizer())
register_transformer(identity, role=summarize.name)
