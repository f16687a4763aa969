"""``episodic`` (stm -> ltm:episodic): the batch cut into episodes.

An episode ends where the task or the session changes (a ``task:<id>`` / ``session:<id>``
tag or metadata key that differs from the episode's; an entry without one continues the
current episode) or where the gap to the previous entry exceeds ``gap_seconds``. Each
episode records actors, start and end (ms), ordered short steps and the outcome (the last
success/failure signal in the episode, else unknown).

Boundaries come from the work, not from how the dataflow batched it: the last episode of a
batch is left *open* (see :class:`EpisodicTransformer`) and the next batch's first entries
continue it unless they cut, so a task split over two batches is still one episode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any

from pydantic import BaseModel, Field

from blackboard import Entry

from .draft import Draft
from .llm.schema import CHARS_PER_TOKEN, narrowed
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

__all__ = [
    "OPEN_KEY",
    "Episode",
    "EpisodicParams",
    "EpisodicTransformer",
    "episodic",
    "split_episodes",
]

#: The key of the open episode: the last of a batch, which the next batch may continue.
OPEN_KEY = "episode:open"


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


def _cuts(e: Entry, task: str | None, session: str | None, last_at: int, gap_ms: int) -> bool:
    t, s = task_of(e), session_of(e)
    return (
        (t is not None and task is not None and t != task)
        or (s is not None and session is not None and s != session)
        or occurred_at(e) - last_at > gap_ms
    )


def split_episodes(
    batch: Sequence[Entry],
    gap_ms: int,
    after: tuple[str | None, str | None, int] | None = None,
) -> list[Episode]:
    """Episodes of ``batch`` in chronological order (see the module doc for the cuts).

    ``after`` is the open episode an earlier batch left, as (task, session, end ms): the
    batch's first entries continue it unless they cut."""
    return _split(batch, gap_ms, after)[1]


def _split(
    batch: Sequence[Entry], gap_ms: int, after: tuple[str | None, str | None, int] | None
) -> tuple[bool, list[Episode]]:
    episodes: list[Episode] = []
    cur: list[Entry] = []
    task, session, last = after if after is not None else (None, None, 0)
    carrying = after is not None  # the current run so far is the earlier batch's episode
    continued = False
    for e in chronological({x.id: x for x in batch}.values()):
        if (cur or carrying) and _cuts(e, task, session, last, gap_ms):
            if cur:
                episodes.append(Episode(tuple(cur), task, session))
            cur, task, session, carrying = [], None, None, False
        continued = continued or (carrying and not cur)
        cur.append(e)
        task = task if task_of(e) is None else task_of(e)
        session = session if session_of(e) is None else session_of(e)
        last = occurred_at(e)
    if cur:
        episodes.append(Episode(tuple(cur), task, session))
    return continued, episodes


class EpisodeOut(BaseModel):
    """LLM output of ``episodic`` for one episode."""

    title: str = Field(min_length=1, max_length=120, description="Short title of what happened.")
    steps: list[str] = Field(description="The steps, in order, one short sentence each.")
    outcome: Outcome = Field(description="success, failure or unknown.")


@lru_cache(maxsize=64)
def episode_out(entries: int, step_tokens: int) -> type[EpisodeOut]:
    """:class:`EpisodeOut` for an episode of ``entries`` entries: a step per entry at most,
    each within ``step_tokens`` (it is cut to them after; see :mod:`consolidation.llm.schema`)."""
    step = Annotated[str, Field(min_length=1, max_length=step_tokens * CHARS_PER_TOKEN)]
    return narrowed(
        EpisodeOut,
        steps=(list[step], Field(max_length=entries, description="The steps, in order, one "
                                 "short sentence each.")),
    )


_SYSTEM = (
    "You turn one episode of an AI agent's short-term memory into an episodic memory: a "
    "short title, the ordered steps (one short sentence each) and the outcome. Use only "
    "what the entries say; the outcome is unknown unless they show success or failure."
)


@dataclass(frozen=True, slots=True)
class _Piece:
    """What one episode draft says; an open episode continued by a later batch is the
    earlier piece followed by the new one (:meth:`after`)."""

    task: str | None
    session: str | None
    title: str | None
    actors: tuple[str, ...]
    claimed: tuple[str, ...]
    start: int
    end: int
    steps: tuple[str, ...]
    outcome: Outcome
    sources: tuple[str, ...]
    tags: frozenset[str]
    importance: float

    @property
    def seed(self) -> tuple[str | None, str | None, int]:
        return self.task, self.session, self.end

    def after(self, prior: _Piece) -> _Piece:
        """``prior`` (the open episode) continued by this piece."""
        actors = tuple(sorted(set(prior.actors) | set(self.actors)))
        return _Piece(
            prior.task if prior.task is not None else self.task,
            prior.session if prior.session is not None else self.session,
            prior.title or self.title,
            actors,
            tuple(sorted((set(prior.claimed) | set(self.claimed)) - set(actors))),
            prior.start,
            self.end,
            prior.steps + self.steps,
            # The last reported outcome wins, as within one batch.
            self.outcome if self.outcome is not Outcome.UNKNOWN else prior.outcome,
            prior.sources + self.sources,
            union_tags([prior.tags, self.tags], ["episode"]),
            max(prior.importance, self.importance),
        )

    @classmethod
    def of_entry(cls, e: Entry) -> _Piece | None:
        """The open episode an earlier batch wrote (None when the entry is not one)."""
        v, m = e.value, e.metadata
        if not isinstance(v, dict) or not isinstance(v.get("steps"), list) or not e.source:
            return None
        try:
            return cls(
                _str_or_none(v.get("task")),
                _str_or_none(v.get("session")),
                _str_or_none(v.get("title")),
                tuple(str(a) for a in v.get("actors") or ()),
                tuple(str(a) for a in m.get("claimed_actors") or ()),
                int(v["start_ms"]),
                int(v["end_ms"]),
                tuple(str(x) for x in v["steps"]),
                Outcome(v.get("outcome", "unknown")),
                tuple(e.source),
                e.tags - {"superseded"},
                e.importance,
            )
        except (KeyError, TypeError, ValueError):
            return None


def _str_or_none(x: object) -> str | None:
    return None if x is None else str(x)


class EpisodicTransformer:
    """Episodes of the batch; the last one stays *open*: it is written under the key
    :data:`OPEN_KEY` (``metadata["open"]``), and the next batch continues it (reading it
    back through ``ctx.existing``) or closes it. The open episode is an entry written with
    the batch's other outputs in one transaction, so a crash anywhere replays to the same
    entries, and an episode is never cut where a batch happened to end."""

    name = "episodic"
    version = "2"
    #: An updated step (a dedupe merge into it) is the step already taken, not a new one.
    reads_updates = False

    async def __call__(self, batch: Sequence[Entry], ctx: TransformContext) -> list[Draft]:
        params = parse_params(EpisodicParams, ctx.params, self.name)
        gap_ms = int(params.gap_seconds * 1000)
        held = ctx.existing.get(OPEN_KEY)
        prior = _Piece.of_entry(held) if held is not None else None
        fresh = [e for e in batch if prior is None or e.id not in prior.sources]
        continued, episodes = _split(fresh, gap_ms, prior.seed if prior else None)
        if not episodes:
            return []
        pieces = [await self._piece(ep, params, ctx) for ep in episodes]
        if prior is not None:
            if continued:
                pieces[0] = pieces[0].after(prior)
            else:
                pieces.insert(0, prior)  # closed as it stood
        model = ctx.llm.model if ctx.llm is not None else None
        last = len(pieces) - 1
        return [
            self._draft(p, ctx, model, open_=i == last, held=held if i == last else None)
            for i, p in enumerate(pieces)
        ]

    async def _piece(self, ep: Episode, params: EpisodicParams, ctx: TransformContext) -> _Piece:
        steps = [
            truncate_tokens(" ".join(entry_text(e).split()), params.step_tokens)
            for e in ep.entries
        ]
        outcome, title = ep.outcome, None
        if ctx.llm is not None:
            res = await ctx.llm.complete_json(
                _SYSTEM, render_batch(ep.entries), episode_out(len(ep.entries), params.step_tokens)
            )
            steps = [truncate_tokens(s, params.step_tokens) for s in res.steps]
            title = res.title
            # A tagged outcome is evidence; the model may only fill in an unknown one.
            outcome = outcome if outcome is not Outcome.UNKNOWN else res.outcome
        return _Piece(
            ep.task,
            ep.session,
            title,
            tuple(ep.actors),
            tuple(ep.claimed_actors),
            ep.start,
            ep.end,
            tuple(steps),
            outcome,
            tuple(e.id for e in ep.entries),
            union_tags((e.tags for e in ep.entries), ["episode"]),
            max(e.importance for e in ep.entries),
        )

    def _draft(
        self, p: _Piece, ctx: TransformContext, model: str | None, *, open_: bool,
        held: Entry | None,
    ) -> Draft:
        value = {
            "task": p.task,
            "session": p.session,
            "title": p.title,
            "actors": list(p.actors),
            "start_ms": p.start,
            "end_ms": p.end,
            "steps": list(p.steps),
            "outcome": p.outcome.value,
            "open": open_,
        }
        meta: dict[str, Any] = {
            "kind": "episode",
            "method": "llm" if model else "segments",
            "task": p.task,
            "session": p.session,
            "start_ms": p.start,
            "end_ms": p.end,
            "outcome": p.outcome.value,
            "actors": list(p.actors),
            "open": open_,
        }
        if p.claimed:
            meta["claimed_actors"] = list(p.claimed)
        return Draft(
            value=value,
            provenance=ctx.provenance(self, p.sources, model),
            tags=p.tags,
            metadata=meta,
            importance=p.importance,
            key=OPEN_KEY if open_ else None,
            supersedes=held.id if held is not None else None,
        )


episodic = register_transformer(EpisodicTransformer())
