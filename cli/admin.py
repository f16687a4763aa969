"""Administration commands: ``blackboard acl grant|revoke|list|service|load-scripts|
protect-default|check`` and ``blackboard check``.

``acl`` commands change Redis users and need an admin connection (``--redis-url`` with a
user holding ``@admin``, e.g. ``default``); ``check`` runs as the service user.
Exit codes: 0 done, 1 a :class:`BlackboardError` (message on stderr), 2 bad usage,
3 ``check`` found drift (and did not repair it) or a broken evidence link, or ``acl check``
found a weakness,
4 permission: the connection may not do it, or ``acl grant`` refused because the default
user is open (run ``acl protect-default`` first).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from blackboard import Blackboard
from blackboard.acl import AclAdmin, Grant
from blackboard.acl_check import (
    DefaultUserOpen,
    check_acl,
    protect_default,
    require_default_closed,
)
from blackboard.check import CheckReport
from consolidation.evidence import EvidenceReport, check_evidence

from .errors import EXIT_DRIFT, EXIT_PERMISSION
from .options import Json, RedisUrl
from .options import with_blackboard as _with_bb
from .output import console, err_console, print_json

__all__ = ["register"]

PasswordFile = Annotated[
    Path | None,
    typer.Option("--password-file", help="Write the new password to this file (mode 0600) "
                 "instead of printing it."),
]

acl_app = typer.Typer(help="Per-agent Redis ACL users (needs an admin Redis user).",
                      no_args_is_help=True)


def _emit_password(g: Grant, path: Path | None, json_out: bool) -> None:
    out = {"username": g.username, "agent": g.agent, "teams": list(g.teams),
           "password_changed": g.password is not None}
    if g.password is not None and path is not None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(g.password + "\n")
        os.chmod(path, 0o600)  # also when the file existed with a wider mode
        out["password_file"] = str(path)
    elif g.password is not None:
        out["password"] = g.password  # printed once; Redis keeps only its hash
    if json_out:
        print_json(out)
        return
    console.print(f"user [bold]{g.username}[/] teams={','.join(g.teams) or '-'}")
    if "password" in out:
        console.print(f"password (shown once): {g.password}")
    elif "password_file" in out:
        console.print(f"password written to {path} (mode 0600)")
    else:
        console.print("password unchanged")


@acl_app.command("grant")
def grant(
    agent: Annotated[str, typer.Argument(help="Agent id.")],
    team: Annotated[list[str] | None, typer.Option("--team", help="A team (repeatable).")] = None,
    rotate: Annotated[bool, typer.Option(help="Generate a new password.")] = False,
    provision: Annotated[bool, typer.Option(help="Register the agent's scopes.")] = True,
    password_file: PasswordFile = None,
    redis_url: RedisUrl = None,
    json_out: Json = False,
) -> None:
    """Create or update AGENT's Redis user for exactly the given teams (and provision its
    scopes, which a confined user may not register itself)."""
    async def go(bb: Blackboard) -> Grant | str:
        try:  # a confined user confines nothing while anyone can log in as default
            await require_default_closed(AclAdmin(bb))
        except DefaultUserOpen as exc:
            return str(exc)
        g = await AclAdmin(bb).grant(agent, team or (), rotate=rotate)
        if provision:
            from memory.access import provision_agent

            await provision_agent(bb, agent, team or ())
        return g

    got = _with_bb(redis_url, go)
    if isinstance(got, str):  # its own line: cli.errors' hint on agent users does not fit
        err_console.print(f"[red]error:[/] {escape(got)}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_PERMISSION)
    _emit_password(got, password_file, json_out)


@acl_app.command("revoke")
def revoke(agent: Annotated[str, typer.Argument(help="Agent id.")],
           redis_url: RedisUrl = None, json_out: Json = False) -> None:
    """Delete AGENT's Redis user (its open connections are closed by Redis)."""
    done = _with_bb(redis_url, lambda bb: AclAdmin(bb).revoke(agent))
    if json_out:
        print_json({"agent": agent, "revoked": bool(done)})
    else:
        console.print(f"{agent}: {'revoked' if done else 'had no user'}")


@acl_app.command("list")
def list_users(redis_url: RedisUrl = None, json_out: Json = False) -> None:
    """The agents with a Redis user, their teams and whether the user is enabled."""
    users = _with_bb(redis_url, lambda bb: AclAdmin(bb).list())
    if json_out:
        print_json([{"agent": u.agent, "username": u.username, "teams": list(u.teams),
                     "enabled": u.enabled, "exists": u.exists} for u in users])
        return
    t = Table("agent", "user", "teams", "enabled")
    for u in users:
        t.add_row(u.agent, u.username, ",".join(u.teams) or "-",
                  "yes" if u.enabled else ("no" if u.exists else "missing"))
    console.print(t)


@acl_app.command("service")
def service(rotate: Annotated[bool, typer.Option(help="Generate a new password.")] = False,
            password_file: PasswordFile = None, redis_url: RedisUrl = None,
            json_out: Json = False) -> None:
    """Create or update the service user (workers and CLI)."""
    g = _with_bb(redis_url, lambda bb: AclAdmin(bb).grant_service(rotate=rotate))
    _emit_password(g, password_file, json_out)


@acl_app.command("load-scripts")
def load_scripts(redis_url: RedisUrl = None, json_out: Json = False) -> None:
    """Load the Lua scripts (agents may not; needed after a restart or SCRIPT FLUSH)."""
    n = _with_bb(redis_url, lambda bb: AclAdmin(bb).load_scripts())
    if json_out:
        print_json({"loaded": n})
    else:
        console.print(f"{n} scripts loaded")


@acl_app.command("protect-default")
def protect_default_cmd(
    disable: Annotated[bool, typer.Option(
        help="Turn the default user off instead (needs another admin user with a password)."
    )] = False,
    password_file: PasswordFile = None,
    redis_url: RedisUrl = None,
    json_out: Json = False,
) -> None:
    """Close the default user: a generated password (shown once, or written to
    --password-file) or, with --disable, off. Saved to the server's aclfile."""
    g = _with_bb(redis_url, lambda bb: protect_default(AclAdmin(bb), disable=disable))
    if g.password is None:
        if json_out:
            print_json({"username": g.username, "disabled": True})
        else:
            console.print(f"user [bold]{g.username}[/] disabled")
        return
    _emit_password(g, password_file, json_out)


@acl_app.command("check")
def acl_check(redis_url: RedisUrl = None, json_out: Json = False) -> None:
    """Report every setting that lets a confined agent escape or weakens its confinement
    (open default user, nopass users, drifted agent rules, no aclfile, ...); exit 3 if any."""
    report = _with_bb(redis_url, lambda bb: check_acl(AclAdmin(bb)))
    if json_out:
        print_json(report.to_json())
    else:
        for f in report.findings:
            where = "" if f.node == "server" else f" [{f.node}]"
            console.print(f"[red]{f.code}[/] {f.subject}{where}: {f.problem}; fix: {f.remedy}")
        console.print(f"{report.nodes} node(s), {report.users} users, "
                      f"{len(report.findings)} findings")
    if not report.ok:
        raise typer.Exit(EXIT_DRIFT)


def check(
    repair: Annotated[
        bool, typer.Option(help="Rewrite drifting indexes from the entries.")
    ] = False,
    scope: Annotated[list[str] | None, typer.Option("--scope", help="Only this scope.")] = None,
    redis_url: RedisUrl = None,
    json_out: Json = False,
) -> None:
    """Verify the indexes against the entries and every belief's evidence links.

    Each evidence link must resolve to a live entry or to the snapshot kept with the
    belief; exit 3 when drift or a broken link remains. --repair rebuilds indexes and
    freezes a snapshot for legacy links whose entry (or its dedupe survivor) is still
    there."""

    async def both(bb: Blackboard) -> tuple[CheckReport, EvidenceReport]:
        return (await bb.check(repair=repair, scopes=scope),
                await check_evidence(bb, scope, repair=repair))

    report, evidence = _with_bb(redis_url, both)
    if json_out:
        print_json({**report.to_json(), "ok": report.ok and not evidence.broken,
                    "evidence": evidence.to_json()})
    else:
        for s, b, i in evidence.broken:
            console.print(f"[red]broken evidence[/] {s} belief {b!r} cites {i!r}: the entry "
                          "is gone and no snapshot was kept")
        if evidence.beliefs:
            console.print(f"{evidence.beliefs} beliefs, evidence links: " + ", ".join(
                f"{n} {k}" for k, n in evidence.links.items())
                + (f" ({evidence.repaired} repaired)" if evidence.repaired else ""),
                highlight=False)
        for d in report.drift:
            mark = "[dim]note[/]" if d.harmless else "[red]drift[/]"
            console.print(f"{mark} {d.scope} {d.index} {d.member!r}: {d.problem}")
        for n in report.notes:
            console.print(f"[dim]note[/] server: {n}", highlight=False, soft_wrap=True)
        console.print(f"{report.scopes} scopes, {report.entries} entries, "
                      f"{len(report.drift)} findings{' (repaired)' if repair else ''}")
    if (not report.ok and not repair) or evidence.broken:
        raise typer.Exit(3)


def register(app: typer.Typer) -> None:
    """Mount ``acl``, ``quota`` and ``check`` on the ``blackboard`` command."""
    from .quota import quota_app

    app.add_typer(acl_app, name="acl")
    app.add_typer(quota_app, name="quota")
    app.command("check")(check)
