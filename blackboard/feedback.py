"""Feedback from use, on the substrate: one agent's verdict on entries of one scope.

``feedback.lua`` records, per entry, each agent's latest verdict (helpful or misleading)
and the counts ranking reads (``Entry.uses``: agents with a verdict, ``Entry.helpful``:
those finding it helpful), and reinforces the entry for a helpful verdict unless that agent
already reinforced it. Counted per agent, so an agent repeating itself changes nothing.
The script proves the voter as the write script proves an author (Redis refuses unless the
calling user may read that agent's keys) and checks every entry before its first write: a
refused call writes nothing. Needs write permission on the scope (EVALSHA's keys), so a
user that may only read a scope (an agent on ``collective``) is refused by Redis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import BlackboardError, InvalidArgument
from .ids import is_entry_id
from .scripts import raise_for_script_error, run_script
from .validation import check_importance

if TYPE_CHECKING:
    from .scope import Scope

__all__ = ["MAX_FEEDBACK_IDS", "Verdict", "record_feedback"]

#: Most entry ids one feedback call takes (a recall returns far fewer).
MAX_FEEDBACK_IDS = 100


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one feedback call did to one entry: ``changed`` (the agent's verdict is new or
    different), ``reinforced`` (the pool's reinforcement was applied), the entry's counts
    after it and its current strength."""

    entry_id: str
    scope: str
    changed: bool
    reinforced: bool
    uses: int
    helpful: int
    strength: float


async def record_feedback(scope: Scope, entry_ids: Sequence[str], *, by: str, helpful: bool,
                          boost: float = 0.2, max_strength: float = 1.0) -> list[Verdict]:
    """Record agent ``by``'s verdict on ``entry_ids`` of ``scope`` (one script, all or
    nothing); -> one :class:`Verdict` per distinct id, in the given order."""
    if not isinstance(helpful, bool):
        raise InvalidArgument(f"helpful must be true or false, got {helpful!r:.40}")
    ids = list(dict.fromkeys(entry_ids))
    if not ids or len(ids) > MAX_FEEDBACK_IDS:
        raise InvalidArgument(f"entry_ids: 1 to {MAX_FEEDBACK_IDS} ids, got {len(ids)}")
    for i in ids:
        if not isinstance(i, str) or not is_entry_id(i):
            raise InvalidArgument(f"entry_ids: {i!r:.80} is not an entry id")
    check_importance(boost)
    check_importance(max_strength)
    try:
        rows = await run_script(
            scope.bb.client, "feedback", scope.keys.script_keys(),
            [scope.id, by, "1" if helpful else "0", repr(boost), repr(max_strength), *ids],
            wait=scope.bb.wait, what=f"feedback on {len(ids)} entries of {scope.id}",
        )
    except BlackboardError as exc:
        raise_for_script_error(exc, "", scope.id)
        raise
    return [Verdict(entry_id=_s(r[0]), scope=scope.id, changed=bool(r[1]),
                    reinforced=bool(r[2]), uses=int(r[3]), helpful=int(r[4]),
                    strength=float(r[5])) for r in rows]


def _s(v: bytes | str) -> str:
    return v.decode() if isinstance(v, bytes) else v
