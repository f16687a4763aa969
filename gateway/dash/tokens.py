"""Token management for an operator: the list (never a secret, nor its hash) and revoke.

The list is read on the operator's own connection (the service user reads the token
registry). Revoking goes through :func:`gateway.tokens.revoke_token`, the path of
`blackboard token revoke`: the token's password is removed from its ACL user and the
user's connections killed, so the token is refused from its next login. That needs
``ACL SETUSER``, which the service user does not hold: the gateway uses its own service
connection (``BLACKBOARD_GATEWAY_SERVICE_URL``, an admin user in the documented setup),
and only after the operator check; without the right it answers 503 (the gateway's
configuration, not the caller, is at fault) naming the CLI.
"""

from __future__ import annotations

import logging
from typing import Any

from blackboard import AccessDenied, Blackboard
from blackboard.acl import AclAdmin
from blackboard.tokens import TokenRecord, TokenStore

from ..caller import Caller, Callers
from ..refusals import BookkeepingUnavailable
from ..tokens import revoke_token
from .ops import require_operator

__all__ = ["list_for", "revoke_for"]

log = logging.getLogger(__name__)


def _row(rec: TokenRecord, caller: Caller) -> dict[str, Any]:
    return {"id": rec.id, "agent": rec.agent, "teams": list(rec.teams),
            "operator": rec.operator, "user": rec.user, "created": rec.created,
            "current": rec.id == caller.token_id}


async def list_for(caller: Caller) -> dict[str, Any]:
    require_operator(caller)
    recs = await TokenStore(AclAdmin(caller.bb)).list()
    return {"tokens": [_row(r, caller) for r in recs]}


async def revoke_for(caller: Caller, service: Blackboard | None, token_id: str,
                     callers: Callers | None = None) -> dict[str, Any]:
    """Revoke ``token_id``; ``callers``: this process's pools, the token's closed at once
    (another process's is dropped at its next request, whose login Redis refuses)."""
    require_operator(caller)
    if service is None:
        raise BookkeepingUnavailable("this gateway has no service connection; run "
                                f"`blackboard token revoke {token_id}` with an admin URL")
    try:
        rec = await revoke_token(service, token_id)
    except AccessDenied:
        # refused at its first ACL read, before any change
        raise BookkeepingUnavailable(
            "the gateway's service connection (BLACKBOARD_GATEWAY_SERVICE_URL) may not "
            f"change ACL users; run `blackboard token revoke {token_id}` with an admin "
            "URL, or give the gateway an admin service URL") from None
    if callers is not None:
        await callers.forget_credential((rec.user, rec.sha256))
    log.info("token %s of agent %s revoked by %s (token %s)", rec.id, rec.agent,
             caller.agent_id, caller.token_id)
    return {"id": rec.id, "agent": rec.agent, "user": rec.user, "revoked": True}
