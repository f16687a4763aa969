"""``blackboard recall TEXT --agent A``: an agent's hybrid recall from the command line,
with the score breakdown (rich table) or JSON.

Mounted by :mod:`cli.app` (``register(app)``); the index is built for this one query
(bootstrapped from Redis, reusing stored embeddings), so nothing needs to run beforehand.

``--json`` shape (stable; extend, never rename): a list, best first, of
``{"rank", "id", "scope", "value", "text", "tags", "key", "created_at", "score", "fused",
"dense", "bm25", "strength", "recency", "importance", "also_in", "has_vector",
"has_first_pass", "cites", "newer_than", "route"}`` (``text``: the value as a person reads it;
``dense``/``bm25`` null when that signal did not apply; ``also_in``: the other forms of the
same fact folded into the hit, ``[{"id", "scope"}]``; ``has_vector`` false when the entry
could rank by keywords only, ``has_first_pass`` true when it then ranked by its first-pass
vector, rough meaning, too; ``cites``: the ids of the raw entries a derived hit stands on;
``newer_than``: the id of an earlier statement on the same thing whose place the hit took,
null when its score placed it;
``route``: how the recall was answered, the same object on every hit, ``{"intent",
"route", "indexes", "notes", "partial", "nodes_visited"}``). The route is also one line on
stderr (with ``--json`` too, so an empty list is explained).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from blackboard import NotFound
from blackboard.entry import value_text

from .options import Json, MaxResults, MaxResultsOld, RedisUrl, canonical_option

__all__ = ["hit_record", "register", "require_agent"]

#: Below this width the table keeps rank, score, scope and text; the breakdown goes to
#: ``--explain`` lines (wrapped), so the text is never squeezed into a few columns.
WIDE = 120


def hit_record(rank: int, h: Any, route: Any = None) -> dict[str, Any]:
    """One hit (a :class:`retrieval.ScoredEntry`) as plain data; ``route``: its recall's
    :class:`~retrieval.completeness.RouteReport`."""
    e = h.entry
    return {
        "rank": rank, "id": e.id, "scope": h.scope, "value": e.value,
        "text": value_text(e.value), "tags": sorted(e.tags), "key": e.key,
        "created_at": e.created_at, "score": h.score, "fused": h.fused, "dense": h.dense,
        "bm25": h.bm25, "strength": h.strength, "recency": h.recency,
        "importance": h.importance,
        "also_in": [{"id": r.entry_id, "scope": r.scope} for r in h.also_in],
        "has_vector": h.has_vector,
        "has_first_pass": h.has_first_pass,
        "cites": list(h.cites),
        "newer_than": h.newer_than,
        "route": None if route is None else {
            "intent": route.intent, "route": route.route, "indexes": list(route.indexes),
            "notes": list(route.notes), "partial": route.partial,
            "nodes_visited": route.nodes_visited},
    }


def require_agent(memory_map: Any, agent: str) -> None:
    """NotFound unless ``agent`` owns a scope that is registered or holds entries: an
    unknown name would otherwise read as an agent with an empty memory."""
    if not any(s.kind == "agent" and s.owner == agent for s in memory_map.scopes):
        raise NotFound(
            f"no memory for agent {agent!r}: none of its scopes is registered or holds "
            "entries (check the name; `blackboard acl grant` provisions an agent)")


def _check_query(lens: str | None, levels: list[str] | None,
                 consistency: str = "immediate") -> None:
    """Reject an unknown lens, level or consistency by name before connecting (exit 2)."""
    from typing import get_args

    from memory.levels import MemoryLevel, unknown_level
    from retrieval.lens import known_lenses, resolve_lens
    from retrieval.query import Consistency

    from .errors import usage

    if lens:
        try:
            resolve_lens(lens)
        except Exception as exc:
            usage(f"{exc} (known lenses: {', '.join(known_lenses())})"
                  if "known lenses" not in str(exc) else str(exc))
    for lv in levels or ():
        if MemoryLevel.named(lv) is None:
            usage(unknown_level(lv))
    if consistency not in get_args(Consistency):
        usage(f"unknown consistency {consistency!r}: use one of "
              f"{', '.join(get_args(Consistency))}")


def _check_as_of(text: str | None) -> Any:
    """``--as-of`` as the query takes it; a bad one is a one-line usage error."""
    if text is None:
        return None
    from pydantic import ValidationError

    from memory import MemoryQuery

    from .errors import usage

    day = text.strip()
    if len(day) == 10 and day[4] == "-" and day[7] == "-":  # a day alone: its start (UTC)
        day += "T00:00:00"
    try:
        return MemoryQuery.model_validate({"as_of": day}).as_of
    except ValidationError as exc:
        msg = exc.errors()[0]["msg"].removeprefix("Value error, ")
        usage(f"--as-of {text!r}: {msg}")


def _routed_query(fields: dict[str, Any], intent: str, timeout_ms: int | None,
                  budget_tokens: int | None) -> Any:
    """The query with ``--intent``, ``--timeout-ms`` and ``--budget-tokens``; a value the
    query model refuses is a one-line usage error naming the option (exit 2)."""
    from pydantic import ValidationError

    from memory import MemoryQuery

    from .errors import usage

    routed: dict[str, Any] = {"intent": intent, "timeout_ms": timeout_ms,
                              "budget_tokens": budget_tokens}
    try:
        return MemoryQuery.model_validate(
            fields | {k: v for k, v in routed.items() if v is not None})
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]) if err["loc"] else ""
        msg = err["msg"].removeprefix("Value error, ")
        opt = f"--{name.replace('_', '-')} " if name in routed else ""
        usage(f"{opt}{msg}")


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def register(app: typer.Typer) -> None:
    """Add the ``recall`` command to ``app``."""
    from .options import need_url as _need_url
    from .options import run as _run

    @app.command()
    def recall(
        text: Annotated[str, typer.Argument(help="What to recall (free text; '' for none).")],
        agent: Annotated[str | None, typer.Option(
            "--agent", help="Agent whose memory is searched (with --gateway: the token's).",
            show_default=False)] = None,
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
        max_results: MaxResults = None,
        limit: MaxResultsOld = None,
        explain: Annotated[bool, typer.Option("--explain", help="One line per hit: why.")] = False,
        as_of: Annotated[
            str | None,
            typer.Option("--as-of", help="What was believed then (ISO 8601, not in the future)."),
        ] = None,
        history: Annotated[
            bool, typer.Option("--history", help="Replaced beliefs too, after the current.")
        ] = False,
        consistency: Annotated[str, typer.Option(
            help="immediate: rank what is indexed now; semantic: first wait until every "
                 "searched memory is embedded.")] = "immediate",
        intent: Annotated[str, typer.Option(
            help="answer: by meaning and keywords; locate: exact words first; explore: "
                 "the table of contents; time_boxed: the best route within the budget.")
        ] = "answer",
        timeout_ms: Annotated[int | None, typer.Option(
            "--timeout-ms", show_default=False,
            help="Return by then with what was found (marked partial).")] = None,
        budget_tokens: Annotated[int | None, typer.Option(
            "--budget-tokens", show_default=False,
            help="At most this many tokens of memory text (marked partial).")] = None,
        gateway: Annotated[str | None, typer.Option(
            "--gateway", envvar="BLACKBOARD_GATEWAY_URL", show_default=False,
            help="A running gateway (http://host:port): recall there, where the index is "
                 "warm, as the agent of --token.")] = None,
        token: Annotated[str | None, typer.Option(
            "--token", envvar="BLACKBOARD_TOKEN", show_default=False,
            help="The agent's token for --gateway (blackboard token create).")] = None,
        redis_url: RedisUrl = None,
        json_out: Json = False,
    ) -> None:
        """Recall from an agent's memory (its scopes, its teams', collective), best first."""

        from .errors import usage
        from .output import console, err_console, print_json

        most = canonical_option(max_results, limit, "max_results", "recall") or 10
        _check_query(lens, level, consistency)
        when = _check_as_of(as_of)
        fields: dict[str, Any] = {"max_results": most, "consistency": consistency}
        if text.strip():
            fields["query"] = text
        for name, value in (("levels", level), ("lens", lens), ("as_of", when),
                            ("include_history", history or None)):
            if value:
                fields[name] = value
        q = _routed_query(fields, intent, timeout_ms, budget_tokens)
        if gateway:
            if not token:
                usage("--gateway needs the agent's token: --token or BLACKBOARD_TOKEN "
                      "(blackboard token create --agent A)")
            who, hits = _run(_over_gateway(gateway, token, agent, q, explain))
        else:
            if not agent:
                usage("--agent is required (or --gateway URL with the agent's --token)")
            who = agent
            hits = _run(_in_process(_need_url(redis_url), agent, team or (), q, explain))
        route = getattr(hits, "route", None)
        if json_out:
            print_json([hit_record(i, h, route) for i, h in enumerate(hits, 1)])
        else:
            _table(console, text, who, hits, explain)
        if route is not None:  # on stderr: --json's stdout stays the list
            err_console.print(route.line(), style="dim", markup=False, highlight=False)


async def _in_process(url: str, agent: str, teams: Any, q: Any, explain: bool) -> list[Any]:
    """The recall run here: the agent's scopes indexed for this one query."""
    from blackboard import Blackboard
    from memory import AgentMemory
    from retrieval.recall import Retriever

    from .output import err_console

    async with (
        Blackboard.connect(url) as bb,
        # one recall and out: embedding the backlog in the background would only make the
        # exit wait for it (the index worker stores vectors for everyone)
        Retriever(bb, background_embed=False) as retriever,
        AgentMemory(bb, agent, teams=teams, retriever=retriever) as mem,
    ):
        require_agent(await mem.memory_map(), agent)
        # The first free-text recall may load the embedder and indexes the readable
        # scopes: seconds, so say so (on stderr, gone when done).
        with err_console.status(f"recalling: indexing agent {agent}'s memory "
                                "(a search by meaning loads the embedder)"):
            return await mem.recall(q, explain=explain)


async def _over_gateway(url: str, token: str, agent: str | None, q: Any,
                        explain: bool) -> tuple[str, list[Any]]:
    """The recall a running gateway answers from its warm index (no model loaded here):
    the token's agent, and its hits. ``agent``, when given, must be the token's."""
    from memory.remote import RemoteMemory

    from .errors import usage

    async with RemoteMemory(url, token) as mem:
        who = (await mem.memory_map()).agent
        if agent is not None and who != agent:
            usage(f"--agent {agent!r} is not the token's agent ({who!r}): drop --agent or "
                  "use that agent's token")
        return who, await mem.recall(q, explain=explain)


def _table(console: Any, text: str, agent: str, hits: list[Any], explain: bool) -> None:
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    if not hits:
        console.print(f"nothing recalled for {text!r} in agent {agent}'s memory",
                      markup=False)
        return
    wide = console.width >= WIDE
    t = Table(title=escape(f"recall {text!r} for agent {agent} ({len(hits)} hits)"),
              title_justify="left")
    t.add_column("#", justify="right")
    t.add_column("score", justify="right")
    if wide:
        for col in ("fused", "dense", "bm25", "strength", "recency", "imp"):
            t.add_column(col, justify="right")
    t.add_column("scope", overflow="fold", ratio=1)
    t.add_column("text", overflow="fold", ratio=3)
    for i, h in enumerate(hits, 1):
        parts = [_num(h.fused), _num(h.dense), _num(h.bm25), _num(h.strength),
                 _num(h.recency), f"{h.importance:.2f}"] if wide else []
        t.add_row(str(i), f"{h.score:.3f}", *parts, Text(h.scope),
                  Text(value_text(h.entry.value)))
    console.print(t)
    if explain:
        for i, h in enumerate(hits, 1):
            console.print(f"{i}. {h.explain()}", style="dim", markup=False, highlight=False)
    elif not wide:
        console.print("[dim](--explain adds each hit's score breakdown; --json all of it)[/]")
