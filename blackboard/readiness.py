"""Whether a server can serve confined agents: reachable, and every script loaded (an
agent user may only EVALSHA what the service or admin user loaded)."""

from __future__ import annotations

from typing import Any

from .scripts import SCRIPTS

__all__ = ["missing_scripts"]


async def missing_scripts(bb: Any) -> list[str]:
    """Names of the scripts the server does not hold (PING first: raises when it is down)."""
    await bb.client.ping()
    scripts = SCRIPTS.all()
    have = await bb.client.script_exists(*(s.sha for s in scripts))
    if isinstance(have, dict):  # a cluster answers per node: loaded means on every primary
        have = [all(v) for v in zip(*have.values(), strict=True)]
    return [s.name for s, ok in zip(scripts, have, strict=True) if not ok]
