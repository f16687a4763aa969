"""The ways around the ACL: the default user, and every setting that weakens confinement.

A confined agent user is only as strong as the server around it. While Redis's ``default``
user is on with ``nopass``, any client, a confined agent included, runs ``AUTH default x``
and has every permission. :func:`require_default_closed` is what ``blackboard acl grant``
checks first; :func:`protect_default` is the remedy; :func:`check_acl` lists every setting
that lets an agent escape or weakens its confinement (``blackboard acl check``).
Each finding is tested in ``tests/security/test_security_default_user.py``.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass, field
from typing import Any

from . import keys as K
from .acl import (
    AGENT_USER_PREFIX,
    SERVICE_RULES,
    SERVICE_USER,
    AclAdmin,
    Grant,
    agent_rules,
    pairs,
)
from .codec import decoded
from .errors import AccessDenied, BlackboardError, InvalidArgument, ServerError

__all__ = [
    "DEFAULT_USER",
    "AclFinding",
    "AclReport",
    "DefaultUserOpen",
    "check_acl",
    "default_open",
    "other_admins",
    "protect_default",
    "require_default_closed",
]

DEFAULT_USER = "default"  # Redis's own user: a connection that never AUTHs is this user
PROTECT_HINT = (
    "run `blackboard acl protect-default --password-file F`, then connect as "
    "redis://default:<password>@host:port (docs/security.md, 'The default user')"
)
# The parts of a user that are its permissions (flags hold on/off and password state,
# which are judged on their own).
_RULE_FIELDS = ("commands", "keys", "channels", "selectors")
_LOOPBACK = ("127.", "::1", "-::1", "localhost")


def user_info(raw: Any) -> dict[str, Any]:
    """``ACL GETUSER``'s reply decoded to str; {} for a missing user."""
    out = {k: decoded(v) for k, v in pairs(raw).items()}
    if "selectors" in out:
        out["selectors"] = [{k: decoded(v) for k, v in pairs(s).items()} for s in out["selectors"]]
    return out


class DefaultUserOpen(AccessDenied):
    """The default user is on with no password, so confining an agent is pointless."""


def _flags(info: dict[str, Any]) -> set[str]:
    return set(info.get("flags") or ())


def _is_open(info: dict[str, Any]) -> bool:
    return {"on", "nopass"} <= _flags(info)


async def default_open(admin: AclAdmin) -> bool:
    """The default user is on with ``nopass`` on some node."""
    infos = await admin.per_node("ACL", "GETUSER", DEFAULT_USER)
    return any(_is_open(user_info(i)) for i in infos.values())


async def require_default_closed(admin: AclAdmin) -> None:
    """Raise :class:`DefaultUserOpen` while the default user is open: a confined user is
    no confinement while any client can become ``default``."""
    if await default_open(admin):
        raise DefaultUserOpen(
            "the Redis default user is on with no password, so a confined agent could "
            f"`AUTH default x` and leave its ACL user: {PROTECT_HINT}"
        )


async def other_admins(admin: AclAdmin) -> list[str]:
    """Users other than default, enabled and with a password on every node, that may run
    ``ACL SETUSER`` there (asked with ``ACL DRYRUN``)."""
    names = {str(decoded(n)) for got in (await admin.per_node("ACL", "USERS")).values()
             for n in got or ()}
    out = []
    for name in sorted(names - {DEFAULT_USER}):
        infos = [user_info(i) for i in (await admin.per_node("ACL", "GETUSER", name)).values()]
        if any("on" not in _flags(i) or "nopass" in _flags(i) for i in infos):
            continue
        try:
            dry = await admin.per_node("ACL", "DRYRUN", name, "ACL", "SETUSER", "bb-probe")
        except ServerError:
            continue
        if all(decoded(v) == "OK" for v in dry.values()):
            out.append(name)
    return out


async def protect_default(
    admin: AclAdmin, *, password: str | None = None, disable: bool = False
) -> Grant:
    """Give the default user a password (generated unless given; returned once), or with
    ``disable`` turn it off, which needs another admin user (:func:`other_admins`) so the
    server keeps one. Saved to the aclfile where there is one."""
    if disable:
        if not await other_admins(admin):
            raise BlackboardError(
                "refusing to disable the default user: no other enabled user with a password "
                "may run ACL SETUSER; protect it with a password instead (drop --disable)"
            )
        await admin.per_node("ACL", "SETUSER", DEFAULT_USER, "off", "resetpass")
        password = None
    else:
        if password is not None and not password:
            raise InvalidArgument("the default user's password must not be empty")
        password = password if password is not None else secrets.token_urlsafe(32)
        await admin.per_node("ACL", "SETUSER", DEFAULT_USER, "resetpass", f">{password}")
    await admin.save()
    return Grant(DEFAULT_USER, password)


@dataclass(frozen=True, slots=True)
class AclFinding:
    """One setting that lets a confined agent escape, or weakens its confinement."""

    code: str  # default-open, nopass, agent-drift, agent-unrecorded, service-drift, ...
    subject: str  # the user or the server setting
    problem: str
    remedy: str
    node: str = "server"


@dataclass(slots=True)
class AclReport:
    nodes: int = 0
    users: int = 0
    findings: list[AclFinding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "nodes": self.nodes, "users": self.users,
                "findings": [asdict(f) for f in self.findings]}


def _rules_of(info: dict[str, Any]) -> dict[str, Any]:
    return {k: info.get(k) for k in _RULE_FIELDS}


async def _expected(admin: AclAdmin, node: Any, rules: list[str] | tuple[str, ...]) -> Any:
    """Redis's own rendering of ``rules`` on ``node``: set on a scratch user created off
    and without a password (nobody can log in as it), read back, deleted."""
    scratch = f"bb-check-{secrets.token_hex(6)}"
    try:
        await admin.on_node(node, "ACL", "SETUSER", scratch, *rules, "off")
        return _rules_of(user_info(await admin.on_node(node, "ACL", "GETUSER", scratch)))
    finally:
        await admin.on_node(node, "ACL", "DELUSER", scratch)


def _broad(info: dict[str, Any]) -> list[str]:
    """What makes a user unconfined: every key, every command (root or a selector)."""
    parts = [info, *(info.get("selectors") or ())]
    out = []
    # ``~*``, ``%R~*`` (read every key) and ``%W~*`` alike
    if any(k.split("~", 1)[-1] == "*" for p in parts for k in str(p.get("keys") or "").split()):
        out.append("every key (~*)")
    if any(str(p.get("commands") or "").startswith("+@all") for p in parts):
        out.append("every command (+@all)")
    return out


#: A finding before it is tied to a node: (code, subject, problem, remedy).
_Found = tuple[str, str, str, str]


def _config_findings(conf: dict[str, str]) -> list[_Found]:
    """What a node's CONFIG says about its ACLs surviving a restart and its exposure."""
    out: list[_Found] = []
    if not conf.get("aclfile"):
        out.append(("no-aclfile", "aclfile", "no aclfile: ACL users (and a protected default "
                    "user) live in memory only and are lost, default open again, on restart",
                    "start Redis with --aclfile (`blackboard server` does) and re-run the "
                    "grants"))
    binds = conf.get("bind", "").split()
    if conf.get("protected-mode") == "no" and any(not b.startswith(_LOOPBACK) for b in binds):
        out.append(("protected-mode-off", "protected-mode", f"protected-mode is off and Redis "
                    f"binds {' '.join(binds)}: an open default user is reachable from the "
                    "network", "CONFIG SET protected-mode yes, or bind to loopback only"))
    for opt in ("enable-debug-command", "enable-module-command", "enable-protected-configs"):
        if conf.get(opt, "no") != "no":
            out.append((opt, opt, f"{opt} is {conf[opt]}: DEBUG/MODULE/protected CONFIG SET "
                        "can crash or reconfigure the server for any user allowed the command",
                        f"set {opt} no in the server's configuration"))
    return out


def _open_finding(user: str) -> _Found:
    """An enabled user anyone can log in as."""
    if user == DEFAULT_USER:
        return ("default-open", user, "the default user is on with no password: any client, "
                "a confined agent too, can `AUTH default x` and do anything", PROTECT_HINT)
    return ("nopass", user, f"user {user} is on with nopass: any password logs in as it",
            f"ACL SETUSER {user} resetpass >NEW (or `acl grant --rotate`)")


async def _agent_findings(admin: AclAdmin, node: Any, user: str, info: dict[str, Any],
                          recorded: dict[str, tuple[str, ...]]) -> list[_Found]:
    """An agent user against its grant record."""
    agent = user[len(AGENT_USER_PREFIX):]
    if agent not in recorded:
        return [("agent-unrecorded", user, "an agent user with no grant record: its rules "
                 "cannot be checked against what `acl grant` gives",
                 f"`blackboard acl grant {agent}` (or `acl revoke {agent}`)")]
    want = await _expected(admin, node, agent_rules(agent, recorded[agent], admin.bb.partitions))
    if _rules_of(info) == want:
        return []
    return [("agent-drift", user, "its rules differ from what `acl grant` gives "
             f"(teams {','.join(recorded[agent]) or '-'}); it may reach more",
             f"`blackboard acl grant {agent}` with its teams rewrites them")]


async def _user_findings(admin: AclAdmin, node: Any, user: str, info: dict[str, Any],
                         recorded: dict[str, tuple[str, ...]], admins: set[str]) -> list[_Found]:
    """One user's findings: open, drifted from its grant, or broader than its role."""
    if "on" not in _flags(info):
        return []  # nobody can log in as a disabled user
    out = [_open_finding(user)] if _is_open(info) else []
    if user.startswith(AGENT_USER_PREFIX):
        out += await _agent_findings(admin, node, user, info, recorded)
    elif user == SERVICE_USER:
        if _rules_of(info) != await _expected(admin, node, SERVICE_RULES):
            out.append(("service-drift", user, "its rules differ from SERVICE_RULES",
                        "`blackboard acl service` rewrites them"))
    elif user not in admins and user != DEFAULT_USER and _broad(info):
        out.append(("broad-user", user, f"user {user} may use {' and '.join(_broad(info))} "
                    "but is neither the service user nor an ACL admin",
                    f"narrow it (ACL SETUSER {user} ...) or delete it"))
    return out


async def _check_node(admin: AclAdmin, node: Any, name: str, report: AclReport,
                      recorded: dict[str, tuple[str, ...]], admins: set[str]) -> None:
    conf = pairs(await admin.on_node(node, "CONFIG", "GET", "*"))
    found = _config_findings({k: str(decoded(v)) for k, v in conf.items()})
    names = sorted({str(decoded(n)) for n in await admin.on_node(node, "ACL", "USERS") or ()})
    report.users = max(report.users, len(names))
    for user in names:
        info = user_info(await admin.on_node(node, "ACL", "GETUSER", user))
        found += await _user_findings(admin, node, user, info, recorded, admins)
    report.findings += [AclFinding(*f, name) for f in found]


async def check_acl(admin: AclAdmin) -> AclReport:
    """Every finding on every node (see :class:`AclFinding` codes)."""
    recorded = {str(decoded(k)): tuple(json.loads(v))
                for k, v in (await admin.bb.client.hgetall(K.ACL_AGENTS)).items()}
    admins = set(await other_admins(admin))
    report = AclReport()
    for node in admin.nodes():
        report.nodes += 1
        await _check_node(admin, node, "server" if node is None else node.name, report,
                          recorded, admins)
    return report
