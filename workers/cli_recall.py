"""``blackboard recall TEXT --agent A``: an agent's hybrid recall from the command line,
with the score breakdown (rich table) or JSON.

Mounted by :mod:`workers.cli` (``register(app)``); the index is built for this one query
(bootstrapped from Redis, reusing stored embeddings), so nothing needs to run beforehand.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

__all__ = ["hit_record", "register"]

# Same options as workers.cli (typer resolves annotations in this module's globals).
RedisUrl = Annotated[
    str | None,
    typer.Option("--redis-url", envvar="BLACKBOARD_REDIS_URL", help="Redis URL (redis://...)."),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON for programs.")]


def hit_record(rank: int, h: Any) -> dict[str, Any]:
    """One hit (a :class:`retrieval.ScoredEntry`) as plain data."""
    e = h.entry
    return {
        "rank": rank, "id": e.id, "scope": h.scope, "value": e.value, "tags": sorted(e.tags),
        "key": e.key, "created_at": e.created_at, "score": h.score, "fused": h.fused,
        "dense": h.dense, "bm25": h.bm25, "strength": h.strength, "recency": h.recency,
        "importance": h.importance,
    }


def _short(v: Any, n: int = 80) -> str:
    s = v if isinstance(v, str) else str(v)
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def register(app: typer.Typer) -> None:
    """Add the ``recall`` command to ``app``."""
    from .cli import _need_url, _run

    @app.command()
    def recall(
        text: Annotated[str, typer.Argument(help="What to recall (free text; '' for none).")],
        agent: Annotated[str, typer.Option("--agent", help="Agent whose memory is searched.")],
        team: Annotated[
            list[str] | None, typer.Option("--team", help="Team of the agent (repeatable).")
        ] = None,
        level: Annotated[
            list[str] | None,
            typer.Option("--level", help="Only these levels (working, stm, semantic...)."),
        ] = None,
        lens: Annotated[
            str | None,
            typer.Option(help="Preset: recent_actions, failures, facts_about:X, procedures."),
        ] = None,
        limit: Annotated[int, typer.Option(help="Most hits shown.")] = 10,
        explain: Annotated[bool, typer.Option("--explain", help="One line per hit: why.")] = False,
        redis_url: RedisUrl = None,
        json_out: Json = False,
    ) -> None:
        """Recall from an agent's memory (its scopes, its teams', collective), best first."""
        from blackboard import Blackboard
        from memory import AgentMemory, MemoryQuery

        from .output import console, print_json

        url = _need_url(redis_url)

        async def main() -> None:
            async with (
                Blackboard.connect(url) as bb,
                AgentMemory(bb, agent, teams=team or ()) as mem,
            ):
                fields: dict[str, Any] = {"max_results": limit}
                if text.strip():
                    fields["query"] = text
                if level:
                    fields["levels"] = level
                if lens:
                    fields["lens"] = lens
                hits = await mem.recall(MemoryQuery(**fields), explain=explain)
            if json_out:
                print_json([hit_record(i, h) for i, h in enumerate(hits, 1)])
                return
            _table(console, text, agent, hits, explain)

        _run(main())


def _table(console: Any, text: str, agent: str, hits: list[Any], explain: bool) -> None:
    from rich.table import Table

    t = Table(title=f"recall {text!r} for agent {agent} ({len(hits)} hits)")
    for col in ("#", "score", "fused", "dense", "bm25", "strength", "recency", "imp"):
        t.add_column(col, justify="right")
    t.add_column("scope")
    t.add_column("value")
    for i, h in enumerate(hits, 1):
        t.add_row(str(i), f"{h.score:.3f}", _num(h.fused), _num(h.dense), _num(h.bm25),
                  _num(h.strength), _num(h.recency), f"{h.importance:.2f}", h.scope,
                  _short(h.entry.value))
    console.print(t)
    if explain:
        for h in hits:
            console.print(h.explain(), style="dim", markup=False, highlight=False)
