"""``blackboard transfer A B [--level L ...] [--json]``: agent B starts with agent A's
long-term memory (:mod:`memory.transfer`). An operator action: it runs on the service
connection (a confined agent's Redis user may write neither the other agent's scopes nor
read its grants), acting as A with the teams A's ACL grant records; refused when B belongs
to a team A is not in.

``--json`` shape: ``{"predecessor", "successor": str, "levels": [str], "copied",
"present", "skipped": {level: int}, "total_copied": int}``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .options import Json, RedisUrl
from .options import with_blackboard as _with_bb
from .output import console, print_json

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the ``transfer`` command to ``app``."""

    @app.command()
    def transfer(
        predecessor: Annotated[str, typer.Argument(help="Agent whose memory is handed on.")],
        successor: Annotated[str, typer.Argument(help="Agent that receives it.")],
        level: Annotated[list[str] | None, typer.Option(
            "--level", "--levels",
            help="Long-term levels to copy (repeatable, or comma-separated): episodic, "
                 "semantic, procedural; all three by default.")] = None,
        redis_url: RedisUrl = None,
        json_out: Json = False,
    ) -> None:
        """Copy A's long-term memory into B's, each entry with provenance; idempotent."""
        from blackboard import Blackboard, InvalidArgument
        from memory import AgentMemory
        from memory.teams import teams_of
        from memory.transfer import TransferReport, transfer_levels

        from .errors import usage

        try:  # a bad level: exit 2 before connecting
            levels = transfer_levels([x for v in level for x in v.split(",")]) if level else None
        except InvalidArgument as exc:
            usage(str(exc), as_json=json_out)

        async def go(bb: Blackboard) -> TransferReport:
            async with AgentMemory(bb, predecessor, await teams_of(bb, predecessor),
                                   default_retriever=False) as mem:
                return await mem.transfer_to(successor, levels)

        report = _with_bb(redis_url, go)
        if json_out:
            print_json(report.to_json())
            return
        parts = [f"{lvl} {report.copied[lvl]}" for lvl in report.levels]
        again = sum(report.present.values())
        console.print(
            f"{predecessor} -> {successor}: copied {report.total_copied} "
            f"({', '.join(parts)}); {again} already there", highlight=False)
