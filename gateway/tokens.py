"""Bearer tokens: ``bbt_<id>_<base64url(JSON)>`` carrying the Redis user and password.

The gateway keeps no secret: it logs in to Redis with the credential the token carries,
so what a token may touch is exactly what its Redis user may touch. Creating a token
grants (or updates) the agent's ACL user and adds one new password to it; revoking
removes only that password (:class:`blackboard.tokens.TokenStore`).
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from blackboard import Blackboard, NotFound
from blackboard.acl import SERVICE_USER, AclAdmin, agent_username
from blackboard.tokens import TokenRecord, TokenStore

from .refusals import Unauthorized

__all__ = ["PREFIX", "TokenClaims", "create_token", "list_tokens", "parse_token",
           "revoke_token"]

PREFIX = "bbt_"


@dataclass(frozen=True, slots=True)
class TokenClaims:
    """What a token says: its id, Redis user and password, agent, teams, operator.
    Only ``user``/``password`` are checked (by Redis); a token that lies about its agent
    still runs as its user, which Redis confines."""

    id: str
    user: str
    password: str
    agent: str
    teams: tuple[str, ...]
    operator: bool


def encode_token(c: TokenClaims) -> str:
    body = json.dumps({"u": c.user, "p": c.password, "a": c.agent, "t": list(c.teams),
                       "o": c.operator}, separators=(",", ":"))
    b64 = base64.urlsafe_b64encode(body.encode()).decode().rstrip("=")
    return f"{PREFIX}{c.id}_{b64}"


def parse_token(token: str) -> TokenClaims:
    """The claims of a token; :class:`Unauthorized` (one line) when it is malformed."""
    try:
        if not token.startswith(PREFIX):
            raise ValueError("no bbt_ prefix")
        tid, _, b64 = token[len(PREFIX):].partition("_")
        if not tid or not b64:
            raise ValueError("no id")
        d = json.loads(base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)))
        teams = d["t"]
        if not (isinstance(d["u"], str) and isinstance(d["p"], str)
                and isinstance(d["a"], str) and isinstance(teams, list)
                and all(isinstance(t, str) for t in teams)):
            raise ValueError("bad field types")
        user, agent = d["u"], d["a"]
        operator = user == SERVICE_USER
        if not operator:
            # The agent is the user's, whatever the token says: a confined user's memory
            # is its own agent's.
            agent = _agent_of(user)
        return TokenClaims(tid, user, d["p"], agent, tuple(teams), operator)
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise Unauthorized(f"malformed bearer token ({exc})") from None


def _agent_of(user: str) -> str:
    from blackboard.acl import AGENT_USER_PREFIX

    if not user.startswith(AGENT_USER_PREFIX):
        raise ValueError(f"user {user!r} is neither an agent's nor the service user")
    agent = user[len(AGENT_USER_PREFIX):]
    agent_username(agent)  # validates it
    return agent


async def create_token(bb: Blackboard, agent: str, teams: Sequence[str] | None = None, *,
                       operator: bool = False) -> tuple[TokenRecord, str]:
    """Grant the user and add the token's password (``bb``: an admin connection).

    An agent token: the agent's user is created or updated for ``teams`` (None: keep the
    teams it has; every token of an agent shares its user, so its teams) and its scopes
    provisioned. An operator token: a password on the service user (every scope).
    -> (record, the token — shown once)."""
    acl = AclAdmin(bb)
    if operator:
        await acl.grant_service()
        user, ts = SERVICE_USER, tuple(sorted(set(teams or ())))
        agent_username(agent)  # an operator token still names who holds it
    else:
        if teams is None:
            try:
                teams = await acl.teams_of(agent)
            except NotFound:
                teams = ()
        grant = await acl.grant(agent, teams)
        user, ts = grant.username, grant.teams
        from memory.access import provision_agent

        await provision_agent(bb, agent, ts)
    tid = secrets.token_hex(6)
    password = secrets.token_urlsafe(32)
    rec = await TokenStore(acl).add(tid, agent, ts, operator, user, password)
    return rec, encode_token(TokenClaims(tid, user, password, agent, ts, operator))


async def list_tokens(bb: Blackboard) -> list[TokenRecord]:
    return await TokenStore(AclAdmin(bb)).list()


async def revoke_token(bb: Blackboard, token_id: str) -> TokenRecord:
    return await TokenStore(AclAdmin(bb)).revoke(token_id)
