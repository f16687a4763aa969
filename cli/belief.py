"""``blackboard belief confirm|correct ID``: feedback on a belief from the command line, as
an agent (``--agent``): the feedback entry is written into that agent's stm as evidence
(memory.feedback); the belief reflects it at its next consolidation. A refusal (not a
belief, a scope the agent may not read, no such belief, a claim about something else) is
one line on stderr, exit 1, and nothing is written."""

from __future__ import annotations

from typing import Annotated

import typer

from .options import Json, RedisUrl

__all__ = ["register"]

belief_app = typer.Typer(help="Confirm or correct a belief (a semantic fact) as an agent.",
                         no_args_is_help=True)

Agent = Annotated[str, typer.Option("--agent", help="The agent giving the feedback.")]
Teams = Annotated[list[str] | None, typer.Option("--team", help="Team of the agent "
                                                 "(repeatable; its beliefs become readable).")]
Scope = Annotated[str | None, typer.Option("--scope", help="The belief's scope, if known.")]


def _feedback(redis_url: str | None, agent: str, teams: list[str] | None, json_out: bool,
              act: str, belief_id: str, claim: str | None, scope: str | None) -> None:
    from blackboard import Blackboard
    from memory import AgentMemory

    from .options import need_url, run
    from .output import console, print_json

    url = need_url(redis_url)

    async def main() -> None:
        async with (Blackboard.connect(url) as bb,
                    AgentMemory(bb, agent, teams=teams or (), default_retriever=False) as mem):
            if claim is None:
                e = await mem.confirm(belief_id, scope=scope)
            else:
                e = await mem.correct(belief_id, claim, scope=scope)
        out = {"id": e.id, "scope": e.scope, "author": e.author, "feedback": act,
               "belief": e.metadata["belief"], "belief_scope": e.metadata["belief_scope"],
               "statement": e.text}
        if json_out:
            print_json(out)
        else:
            console.print(f"{act}ed belief {out['belief']} ({out['belief_scope']}) as "
                          f"{agent}: {out['statement']}; evidence {e.id} in {e.scope}",
                          highlight=False, markup=False)

    run(main())


@belief_app.command("confirm")
def confirm(belief_id: Annotated[str, typer.Argument(help="The belief's id.")], agent: Agent,
            team: Teams = None, scope: Scope = None, redis_url: RedisUrl = None,
            json_out: Json = False) -> None:
    """Confirm a belief: operator-confirmed evidence for its claim."""
    _feedback(redis_url, agent, team, json_out, "confirm", belief_id, None, scope)


@belief_app.command("correct")
def correct(belief_id: Annotated[str, typer.Argument(help="The belief's id.")],
            claim: Annotated[str, typer.Argument(help="What is true instead: the new value, "
                                                 "or a sentence of the belief's subject.")],
            agent: Agent, team: Teams = None, scope: Scope = None,
            redis_url: RedisUrl = None, json_out: Json = False) -> None:
    """Correct a belief: evidence against it that supersedes it when it wins."""
    _feedback(redis_url, agent, team, json_out, "correct", belief_id, claim, scope)


def register(app: typer.Typer) -> None:
    """Mount ``belief`` on the ``blackboard`` command."""
    app.add_typer(belief_app, name="belief")
