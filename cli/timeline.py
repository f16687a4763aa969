"""``blackboard timeline --agent A [--at 2023-05] [--depth 1]``: an agent's table of
contents (year -> month -> week -> day -> segment, :mod:`retrieval.toc`), a node and its
children, readable at 80 columns; ``--expand REF`` prints a segment's raw entries;
``--rebuild`` builds the agent's tables again from their entries (or ``--scope``'s).

``--json`` shape: the node (``TocNode.as_dict``: id, ref, level, scope, start_ms, end_ms,
start, end, count, summary, tags, keywords, actors, children, entries) with ``nodes``: its
children, the same way; with ``--expand``, a list of ``{"id", "scope", "created_at",
"text", "value"}``; with ``--rebuild``, ``{scope: entries placed}``.
"""

from __future__ import annotations

import shutil
import textwrap
from typing import Annotated, Any

import typer

from .options import Json, RedisUrl

__all__ = ["register"]


def _width() -> int:
    return max(60, min(100, shutil.get_terminal_size((80, 24)).columns))


def _span(n: Any) -> str:
    d = n.as_dict()
    a, b = d["start"][:16].replace("T", " "), d["end"][:16].replace("T", " ")
    return f"{a} .. {b[11:] if a[:10] == b[:10] else b}"


def _lines(tree: Any, width: int, indent: str = "") -> list[str]:
    """The node (a header, actors and keywords, its summary wrapped), then each child's
    header and one line of its summary, indented, down the depth read."""
    n = tree.node
    w = max(40, width - len(indent))
    label = n.ref if n.level.value == "segment" else n.id
    out = [f"{indent}{n.level.value} {label}"[:width],
           f"{indent}  {_span(n)}, {n.count} entries"[:width]]
    if not indent:
        if n.actors:
            out.append(textwrap.shorten("  actors: " + ", ".join(n.actors), w))
        if n.keywords:
            out.append(textwrap.shorten("  keywords: " + ", ".join(list(n.keywords)[:12]), w))
        out += textwrap.wrap(n.summary, w, initial_indent="  ", subsequent_indent="  ")
    elif n.summary:
        out.append(indent + textwrap.shorten("  " + n.summary, w, placeholder=" …"))
    for c in tree.children:
        out += _lines(c, width, indent + "  ")
    return out


def register(app: typer.Typer) -> None:
    """Add the ``timeline`` command to ``app``."""

    @app.command()
    def timeline(
        agent: Annotated[str, typer.Option("--agent", help="The agent whose tables are read.")],
        at: Annotated[str | None, typer.Option(
            "--at", help="2023, 2023-05, 2023-05-08 or a node id (default: the root).")] = None,
        level: Annotated[str | None, typer.Option(
            "--level", help="year, month, week or day holding --at.")] = None,
        depth: Annotated[int, typer.Option("--depth", help="Levels of children, 0-5.")] = 1,
        scope: Annotated[str | None, typer.Option(
            "--scope", help="One scope of the agent (default: every scope it reads).")] = None,
        team: Annotated[list[str] | None, typer.Option("--team", help="Team of the agent "
                                                       "(repeatable).")] = None,
        expand: Annotated[str | None, typer.Option(
            "--expand", help="A segment's ref (scope#s2023-05-08.0): its raw entries.")] = None,
        rebuild: Annotated[bool, typer.Option(
            "--rebuild", help="Build the tables again from the entries.")] = False,
        redis_url: RedisUrl = None,
        json_out: Json = False,
    ) -> None:
        """An agent's memory by time: a node of its table of contents and its children."""
        from blackboard import Blackboard
        from memory import AgentMemory

        from .options import need_url, run
        from .output import console, print_json

        url = need_url(redis_url)

        async def main() -> Any:
            async with (Blackboard.connect(url) as bb,
                        AgentMemory(bb, agent, teams=team or (), default_retriever=False) as m):
                if rebuild:
                    from consolidation.toc import rebuild as rebuild_toc

                    scopes = [m.access.check_write(scope)] if scope else m.writable_scopes()
                    return {s: await rebuild_toc(bb, s) for s in scopes}
                if expand:
                    return await m.expand(expand, scope=scope)
                return await m.timeline(level, at, depth, scope=scope)

        got = run(main())
        if rebuild:
            if json_out:
                print_json(got)
            else:
                for s, n in got.items():
                    console.print(f"{s}: {n} entries placed", markup=False, highlight=False)
            return
        if expand:
            from blackboard.entry import value_text

            rows = [{"id": e.id, "scope": e.scope, "created_at": e.created_at,
                     "text": value_text(e.value), "value": e.value} for e in got]
            if json_out:
                print_json(rows)
                return
            w = _width()
            for r in rows:
                console.print(textwrap.shorten(f"{r['id']}  {r['text']}", w, placeholder="…"),
                              markup=False, highlight=False)
            return
        if json_out:
            print_json(got.as_dict())
            return
        for line in _lines(got, _width()):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
