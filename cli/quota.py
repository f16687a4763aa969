"""``blackboard quota show|set OWNER``: an agent's or team's quota (docs/security.md
"Quotas"). Runs as the service user or an admin: an agent's own Redis user may only read
its quota (setting it is refused by Redis, exit 4 with one line)."""

from __future__ import annotations

from typing import Annotated

import typer

from blackboard import Blackboard
from blackboard.quotas import OwnerQuota, owner_quota, set_owner_quota

from .options import Json, RedisUrl
from .options import with_blackboard as _with_bb
from .output import console, print_json

__all__ = ["quota_app"]

quota_app = typer.Typer(help="Per-agent and per-team quotas (entries and bytes, per partition).",
                        no_args_is_help=True)

Owner = Annotated[str, typer.Argument(help="agent:<id> or team:<id>.")]


def _show(owner: str, q: OwnerQuota, json_out: bool) -> None:
    if json_out:
        print_json({"owner": owner, "entries": q.entries, "bytes": q.bytes})
    else:
        console.print(f"{owner}: {q.entries} entries, {q.bytes} bytes per partition "
                      "(0 = no limit)", highlight=False)


@quota_app.command("show")
def show(owner: Owner, redis_url: RedisUrl = None, json_out: Json = False) -> None:
    """OWNER's quota as the write scripts enforce it."""
    _show(owner, _with_bb(redis_url, lambda bb: owner_quota(bb, owner)), json_out)


@quota_app.command("set")
def set_(
    owner: Owner,
    entries: Annotated[int | None, typer.Option(help="Live entries per partition.")] = None,
    bytes_: Annotated[int | None, typer.Option("--bytes", help="Bytes per partition.")] = None,
    redis_url: RedisUrl = None,
    json_out: Json = False,
) -> None:
    """Set OWNER's quota in every partition (unnamed limits keep their value)."""

    async def go(bb: Blackboard) -> OwnerQuota:
        cur = await owner_quota(bb, owner)
        q = OwnerQuota(cur.entries if entries is None else entries,
                       cur.bytes if bytes_ is None else bytes_)
        await set_owner_quota(bb, owner, q)
        return q

    _show(owner, _with_bb(redis_url, go), json_out)
