"""``episodic`` (stm -> ltm:episodic): the batch cut into episodes.

An episode ends where the task or the session changes (a ``task:<id>`` / ``session:<id>``
tag or metadata key that differs from the episode's; an entry without one continues the
current episode) or where the gap to the previous entry exceeds ``gap_seconds``. Each
episode records actors, start and end (ms), ordered short steps and the outcome (the last
success/failure signal in the episode, else unknown).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field

from blackboard import Entry

from .draft import Draft
from .params import parse_params
from .prompt import render_batch
from .signals import (
    Outcome,
    actors_of,
    chronological,
    claimed_actors_of,
    final_outcome,
    occurred_at,
    session_of,
    task_of,
)
from .text import entry_text, truncate_tokens, union_tags
from .transformer import TransformContext, register_transformer

__all__ = ["Episode", "EpisodicParams", "EpisodicTransformer", "episodic", "split_episodes"]


@dataclass(frozen=True, slots=True)
class EpisodicParams:
    """``gap_seconds``: a longer silence starts a new episode; ``step_tokens``: each step's
    text is cut to this many tokens."""

    gap_seconds: float = 1800.0
    step_tokens: int = 40

    def __post_init__(self) -> None:
        if not self.gap_seconds > 0:
            raise ValueError("gap_seconds must be positive")
        if self.step_tokens < 1:
            raise ValueError("step_tokens must be >= 1")


@dataclass(frozen=True, slots=True)
class Episode:
    """A run of entries (chronological) of one task/session without a long gap."""

    entries: tuple[Entry, ...]
    task: str | None
    session: str | None

    @property
    def start(self) -> int:
        return occurred_at(self.entries[0])

    @property
    def end(self) -> int:
        return occurred_at(self.entries[-1])

    @property
    def actors(self) -> list[str]:
        return sorted({a for e in self.entries for a in actors_of(e)})

    @property
    def claimed_actors(self) -> list[str]:
        """Writers the entries' metadata or tags name besides their authors (claims)."""
        return sorted({a for e in self.entries for a in claimed_actors_of(e)} - set(self.actors))

    @property
    def outcome(self) -> Outcome:
        return final_outcome(self.entries)


def split_episodes(batch: Sequence[Entry], gap_ms: int) -> list[Episode]:
    """Episodes of ``batch`` in chronological order (see the module doc for the cuts)."""
    episodes: list[Episode] = []
    cur: list[Entry] = []
    task: str | None = None
    session: str | None = None
    for e in chronological({x.id: x for x in batch}.values()):
        t, s = task_of(e), session_of(e)
        if cur and (
            (t is not None and task is not None and t != task)
            or (s is not None and session is not None and s != session)
            or occurred_at(e) - occurred_at(cur[-1]) > gap_ms
        ):
            episodes.append(Episode(tuple(cur), task, session))
            cur, task, session = [], None, None
        cur.append(e)
        task = task if t is None else t
        session = session if s is None else s
    if cur:
        episodes.append(Episode(tuple(cur), task, session))
    return episodes


class EpisodeOut(BaseModel):
    """LLM output of ``episodic`` for one episode."""

    title: str = Field(description="Short title of what happened.")
    steps: list[str] = Field(description="The steps, in order, one short sentence each.")
    outcome: Outcome = Field(description="success, failure or unknown.")


_SYSTEM = (
    "You turn one episode of an AI agent's short-term memory into an episodic memory: a "
    "short title, the ordered steps (one short sentence each) and the outcome. Use only "
    "what the entries say; the outcome is unknown unless they show success or failure."
)


class EpisodicTransformer:
    name = "episodic"
    version = "1"

    async def __call__(self, batch: Sequence[Entry], ctx: TransformContext) -> list[Draft]:
        params = parse_params(EpisodicParams, ctx.params, self.name)
        out = []
        for ep in split_episodes(batch, int(params.gap_seconds * 1000)):
            steps = [
                truncate_tokens(" ".join(entry_text(e).split()), params.step_tokens)
                for e in ep.entries
            ]
            outcome, title, model = ep.outcome, None, None
            if ctx.llm is not None:
                res = await ctx.llm.complete_json(_SYSTEM, render_batch(ep.entries), EpisodeOut)
                steps = [truncate_tokens(s, params.step_tokens) for s in res.steps]
                title, model = res.title, ctx.llm.model
                # A tagged outcome is evidence; the model may only fill in an unknown one.
                outcome = outcome if outcome is not Outcome.UNKNOWN else res.outcome
            value = {
                "task": ep.task,
                "session": ep.session,
                "title": title,
                "actors": ep.actors,
                "start_ms": ep.start,
                "end_ms": ep.end,
                "steps": steps,
                "outcome": outcome.value,
            }
            meta = {
                "kind": "episode",
                "task": ep.task,
                "session": ep.session,
                "start_ms": ep.start,
                "end_ms": ep.end,
                "outcome": outcome.value,
                "actors": ep.actors,
            }
            if ep.claimed_actors:
                meta["claimed_actors"] = ep.claimed_actors
            out.append(
                Draft(
                    value=value,
                    provenance=ctx.provenance(self, [e.id for e in ep.entries], model),
                    tags=union_tags((e.tags for e in ep.entries), ["episode"]),
                    metadata=meta,
                    importance=max(e.importance for e in ep.entries),
                )
            )
        return out


episodic = register_transformer(EpisodicTransformer())
