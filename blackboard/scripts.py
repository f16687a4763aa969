"""Lua scripts kept as files beside this module, loaded once and run by SHA.

Each mutation script is sent as ``_flow.lua`` and ``_lib.lua`` followed by the script file
(the dataflow's service scripts as ``_flow.lua`` and the file); the header of the
file names its KEYS, ARGV and reply. :func:`raise_for_script_error` turns the error replies
the scripts define into the matching :mod:`blackboard.errors` exception.

A script file may start with a ``#!lua`` line (Redis's script flags): it is moved to the
front of the assembled source, where Redis reads it. The scripts that add data (writes,
updates, reinforcements, the relay, buffering) declare it: Redis then refuses the whole call
with ``OOM`` while it is over ``maxmemory``, before any command runs. Without it Redis checks
memory only at a script's first memory-growing command, so a script whose first write frees
something (capacity eviction) would pass the limit and grow on. The scripts that free memory
(delete, expire, prune, reap, the dataflow's takes) keep the old mode and run under the limit;
``beat.lua`` (a worker's heartbeat and lease beats, a few fixed fields) and ``lease.lua``
(the leases maintenance jobs run under) declare ``allow-oom``, so a worker waiting for memory
stays listed and keeps its leases, and the jobs that free memory still run.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from .errors import (
    AccessDenied,
    BlackboardError,
    EntryTooLarge,
    InvalidArgument,
    NotFound,
    OutOfMemory,
    QuotaExceeded,
    ScopeDamaged,
    ScopeFull,
    ScriptMissing,
    ServerError,
    VersionConflict,
)
from .redis_errors import ERROR_REPLIES, REDIS_ERRORS, translate

if TYPE_CHECKING:
    from .durability import Wait

__all__ = [
    "SCRIPTS",
    "Script",
    "load_script",
    "raise_for_script_error",
    "run_script",
    "run_script_many",
]

_LIB = "_lib.lua"
_FLOW = "_flow.lua"
_WITH_LIB = ("write", "update", "delete", "expire", "reinforce", "prune", "reschedule",
             "feedback")
_WITH_FLOW = ("pending_take", "reap", "edge_drop", "relay")
_STANDALONE = (
    "dlq",
    "claim",
    "lease",
    "lease_table",
    "buffer",
    "pending_head",
    "get_entries",
    "embed",
    "ratelimit",
    "redrive",
    "heads",
    "beat",
    "toc",
)


@dataclass(frozen=True, slots=True)
class Script:
    """One Lua script: its name, full source and SHA1."""

    name: str
    source: str
    sha: str


def _read(name: str) -> str:
    return resources.files("blackboard").joinpath("scripts", name).read_text("utf-8")


@cache
def _load_all() -> dict[str, Script]:
    flow = _read(_FLOW)
    lib = f"{flow}\n{_read(_LIB)}"
    out: dict[str, Script] = {}
    for name in _WITH_LIB + _WITH_FLOW + _STANDALONE:
        body = _read(f"{name}.lua")
        shebang = ""
        if body.startswith("#!"):  # Redis reads the flags only on the source's first line
            shebang, body = body.split("\n", 1)
            shebang += "\n"
        if name in _WITH_LIB:
            source = f"{shebang}{lib}\n{body}"
        elif name in _WITH_FLOW:
            source = f"{shebang}{flow}\n{body}"
        else:
            source = f"{shebang}{body}"
        out[name] = Script(name, source, hashlib.sha1(source.encode()).hexdigest())
    return out


class _Scripts:
    def __getitem__(self, name: str) -> Script:
        return _load_all()[name]

    def all(self) -> list[Script]:
        return list(_load_all().values())


SCRIPTS = _Scripts()

_ERR = re.compile(
    r"(ENTRY_TOO_LARGE|SCOPE_FULL|VERSION_CONFLICT|NOT_FOUND|BAD_SCOPE|WRONG_TYPE|FEED_EXHAUSTED"
    r"|NOT_AUTHOR|BAD_AUTHOR|QUOTA_EXCEEDED)"
    r"\s*(.*)"
)


def raise_for_script_error(exc: BaseException, entry_id: str = "", scope: str = "") -> None:
    """Raise the library error a script's error reply stands for (or re-raise ``exc``).

    ``exc`` is what the client raised (or a pipeline answered), already translated
    (:mod:`blackboard.redis_errors`): a script's own codes become their errors here."""
    if not isinstance(exc, BlackboardError) or exc.redis_message is None:
        raise exc  # the library's own (e.g. a script this user may not load)
    if isinstance(exc, OutOfMemory):  # refused before the script ran: nothing written
        raise exc
    if isinstance(exc, AccessDenied):  # refused inside the script
        raise AccessDenied(f"Redis refused the operation: {exc}", by_server=True) from exc
    m = _ERR.search(str(exc))
    if not m:
        if isinstance(exc, ERROR_REPLIES):  # a reply no script code names: say it is Redis's
            typ = BlackboardError if isinstance(exc, ServerError) else type(exc)
            raise typ(f"Redis error: {exc}") from exc
        raise exc  # not a reply: unreachable, a refused login
    code, rest = m.group(1), m.group(2).split()
    if code in ("WRONG_TYPE", "FEED_EXHAUSTED"):
        what = re.sub(r"\s*script: [0-9a-f]{40}.*$", "", m.group(2))
        raise ScopeDamaged(
            f"scope {scope!r} was changed outside the library ({what}); nothing was "
            "written; run `blackboard check --repair`"
        ) from None
    if code == "BAD_SCOPE":
        raise InvalidArgument(f"script called with mismatched scope keys: {m.group(2)}") from None
    if code == "NOT_AUTHOR":
        raise AccessDenied(
            f"this Redis user may not write as agent {rest[0]!r} (the ACL refused the "
            "author proof; see docs/security.md, Authorship)", by_server=True) from None
    if code == "BAD_AUTHOR":
        raise InvalidArgument(f"author must be an agent id: {m.group(2)!r:.80}") from None
    if code == "ENTRY_TOO_LARGE":
        raise EntryTooLarge(int(rest[0]), int(rest[1])) from None
    if code == "QUOTA_EXCEEDED":
        raise QuotaExceeded(rest[0], int(rest[1]), int(rest[2]), int(rest[3]), scope,
                            alone=int(rest[4])) from None
    if code == "SCOPE_FULL":
        raise ScopeFull(f"scope {scope!r} holds its maximum of {rest[0]} entries") from None
    if code == "VERSION_CONFLICT":
        raise VersionConflict(entry_id, int(rest[0]), int(rest[1])) from None
    raise NotFound(f"no entry {entry_id or rest[0]!r} in scope {scope!r}") from None


async def load_script(client: Any, name: str) -> None:
    """SCRIPT LOAD one script; :class:`AccessDenied` with the remedy when the user may not.

    Confined agent users may not SCRIPT LOAD (that would let them EVALSHA Lua of their
    own); the service user loads every script on connect, and ``blackboard acl
    load-scripts`` does it after a restart or SCRIPT FLUSH emptied the script cache.
    """
    try:
        await client.script_load(SCRIPTS[name].source)
    except AccessDenied as exc:
        raise AccessDenied(
            f"the {name!r} script is not loaded on the server and this Redis user may not "
            "load it: connect once as the service user (any worker does) or run "
            "`blackboard acl load-scripts`", by_server=True,
        ) from exc


async def run_script(
    client: Any, name: str, keys: list[str], args: list[Any], *, readonly: bool = False,
    wait: Wait | None = None, what: str = "",
) -> Any:
    """Run a script by SHA, loading it on ``NOSCRIPT`` (after a restart or failover).

    ``readonly``: as ``EVALSHA_RO``, which a user may run on keys it may only read (ACL
    counts EVALSHA's keys as written); the script must write nothing. ``wait``: then wait
    for replicas / the AOF on the same connection (:mod:`blackboard.durability`); ``what``
    names the write in a :class:`NotReplicated`."""
    script = SCRIPTS[name]
    cmd = "EVALSHA_RO" if readonly else "EVALSHA"
    if wait is not None:
        for attempt in (0, 1):
            async with client.pipeline(transaction=False) as pipe:
                pipe.execute_command(cmd, script.sha, len(keys), *keys, *args)
                wait.queue(pipe, client, keys[0])
                reply, acks = await pipe.execute(raise_on_error=False)
            if attempt == 0 and isinstance(reply, ScriptMissing):
                await load_script(client, name)
                continue
            if isinstance(reply, Exception):
                raise reply
            wait.check(acks, what or name)
            return reply
    try:
        return await client.execute_command(cmd, script.sha, len(keys), *keys, *args)
    except ScriptMissing:
        await load_script(client, name)
        return await client.execute_command(cmd, script.sha, len(keys), *keys, *args)


async def run_script_many(
    client: Any, name: str, calls: Sequence[tuple[Sequence[str], Sequence[Any]]],
    *, atomic: bool = False, wait: Wait | None = None, what: str = "",
) -> list[Any]:
    """Run one script once per ``(keys, args)`` in one pipeline; replies in order, an error
    reply as its exception (not raised), so the caller can map each to its item.
    ``wait``: as :func:`run_script`, once after the calls (they must share a slot),
    checked after every call went through.

    ``atomic``: the pipeline is one MULTI/EXEC. Redis queues the calls and runs none of
    them until EXEC arrives, and drops the queue when the connection closes first, so a
    client that dies (``kill -9``) mid-batch leaves nothing, and one that got EXEC through
    leaves everything. On a Redis Cluster every key must then live in one slot.

    On ``NOSCRIPT`` the script is loaded and the whole pipeline sent again: every caller's
    calls are idempotent (writes by fixed id, embeddings by version), so a re-run is safe.
    """
    sha = SCRIPTS[name].sha
    for attempt in (0, 1):
        if atomic and wait is not None and calls:
            replies = await _transaction_then_wait(client, sha, calls, wait)
        else:
            async with client.pipeline(transaction=atomic) as pipe:
                for keys, args in calls:
                    pipe.execute_command("EVALSHA", sha, len(keys), *keys, *args)
                if wait is not None and calls:
                    wait.queue(pipe, client, calls[0][0][0])
                replies = await pipe.execute(raise_on_error=False)
        if attempt == 0 and any(isinstance(r, ScriptMissing) for r in replies):
            await load_script(client, name)
            continue
        if wait is not None and calls:
            *replies, acks = replies
            if not all(isinstance(r, Exception) for r in replies):  # something was written
                wait.check(acks, what or name)
        return list(replies)
    raise AssertionError("unreachable")


async def _transaction_then_wait(
    client: Any, sha: str, calls: Sequence[tuple[Sequence[str], Sequence[Any]]], wait: Wait,
) -> list[Any]:
    """MULTI, the calls, EXEC and then the wait, in that order on one connection (WAIT or
    WAITAOF inside MULTI does not block: Redis answers at once, so it must follow EXEC);
    -> the calls' replies (an error reply as its exception) and the wait's reply last. On
    a cluster every call's key lives in one slot: all go to its master."""
    key = calls[0][0][0]
    kw: dict[str, Any] = {}
    if hasattr(client, "get_node_from_key"):
        kw["target_nodes"] = client.get_node_from_key(key)
    async with client.pipeline(transaction=False) as pipe:
        pipe.execute_command("MULTI", **kw)
        for keys, args in calls:
            pipe.execute_command("EVALSHA", sha, len(keys), *keys, *args)
        pipe.execute_command("EXEC", **kw)
        wait.queue(pipe, client, key)
        out = await pipe.execute(raise_on_error=False)
    executed, acks = out[-2], out[-1]
    if isinstance(executed, Exception):  # EXECABORT: nothing ran; say why, for every call
        why = next((r for r in out[1:-2] if isinstance(r, Exception)), executed)
        return [why] * len(calls) + [acks]
    return [translate(r) if isinstance(r, REDIS_ERRORS) else r for r in executed] + [acks]
