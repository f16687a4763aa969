"""Redis ACL users that confine each agent to its own scopes, its teams' and ``collective``.

Checks in our Python code are not enough: a buggy or hostile agent process may talk to
Redis directly. So each agent gets its own Redis user whose rules let Redis itself refuse
everything outside the agent's keys (see ``docs/security.md`` for the table of rules and
why each is there). The rules are built by :func:`agent_rules` (pure, tested on its own);
:class:`AclAdmin` applies them with an administrator connection (``ACL SETUSER`` needs
the ``@admin`` category, which neither agents nor the service user hold).

Patterns: the scope grammar forbids ``{}*?[]\\`` in scope ids and tags, so a scope name
is written into a glob verbatim; the partition hash tag is matched as ``{p[0-9]}``,
``{p[0-9][0-9]}``... (one pattern per digit count), never ``{p*}``: ``*`` would also
match across ``}`` and ``:`` into another scope's key.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import keys as K
from .codec import as_str
from .errors import AccessDenied, InvalidArgument, NotFound
from .scripts import SCRIPTS
from .validation import validate_name

__all__ = [
    "AGENT_COMMANDS",
    "AGENT_USER_PREFIX",
    "SERVICE_RULES",
    "SERVICE_USER",
    "AclAdmin",
    "AgentUser",
    "Grant",
    "agent_rules",
    "agent_username",
    "partition_tags",
]

AGENT_USER_PREFIX = "bb-agent-"
SERVICE_USER = "bb-service"

# Commands a confined agent may run on the keys its root patterns allow. Reads used by the
# library (entries, indexes, feeds, registry records), the writes the mutation scripts
# issue (a script runs with its caller's permissions: every redis.call is checked), and
# EVALSHA. No EVAL / SCRIPT / FUNCTION: an agent runs only the scripts the service user
# loaded. Nothing without keys that reaches other data (KEYS, SCAN, RANDOMKEY, FLUSH*),
# no server administration (CONFIG, ACL, DEBUG, MONITOR, INFO), no consumer groups.
AGENT_COMMANDS: tuple[str, ...] = (
    # hashes: entries, tag counters, logical keys, registry records (read), cfg (read)
    "hget", "hgetall", "hmget", "hexists", "hlen", "hkeys", "hvals", "hscan", "hstrlen",
    "hset", "hdel", "hincrby",
    # zsets: ix, exp, evict
    "zcard", "zcount", "zrange", "zrangebyscore", "zrevrange", "zrevrangebyscore",
    "zscore", "zmscore", "zrank", "zrevrank", "zadd", "zrem",
    # sets: tag sets
    "sinter", "sunion", "sdiff", "smembers", "sismember", "smismember", "scard", "sscan",
    "sadd", "srem",
    # streams: the scope feeds (observers); XADD and the feed's room check from the scripts
    "xread", "xrange", "xrevrange", "xlen", "xadd", "xinfo|stream",
    # generic, key-checked; GET for the partition flowmark (the scripts' dataflow hold)
    "exists", "type", "pttl", "del", "get",
    # the mutation scripts, by SHA only
    "evalsha", "evalsha_ro",
    # batches: one MULTI/EXEC, so a client killed mid-batch leaves nothing (batch_write.py)
    "multi", "exec", "discard",
    # connection plumbing (redis-py, cluster clients); ACL WHOAMI tells a process which
    # user it is (nothing about others)
    "ping", "echo", "time", "client|setname", "client|getname", "acl|whoami",
    "cluster|slots", "cluster|shards", "cluster|nodes", "command", "readonly", "asking",
)

# The service user (workers, CLI): every key, every command of normal operation; no
# command that destroys or reconfigures the server or its users.
SERVICE_RULES: tuple[str, ...] = (
    "on", "resetkeys", "resetchannels", "clearselectors", "-@all", "~*", "&*",
    "+@all", "-@dangerous", "-script|flush", "-script|kill", "-function",
    # what the library needs from @dangerous: INFO/CONFIG GET (the persistence warning,
    # stats), MODULE LIST (Query Engine probe), cluster topology, COMMAND (cluster client)
    "+info", "+config|get", "+module|list", "+cluster|slots", "+cluster|shards",
    "+cluster|nodes", "+cluster|info", "+cluster|myid", "+command", "+role",
)


def agent_username(agent_id: str) -> str:
    """The Redis user of an agent: ``bb-agent-<agent id>``."""
    return AGENT_USER_PREFIX + validate_name(agent_id, "agent id")


def partition_tags(partitions: int) -> list[str]:
    """Globs matching exactly the hash tags ``{p0}`` .. ``{p<partitions-1>}`` by digit count
    (they may match a few numbers >= partitions, which have no keys)."""
    if partitions < 1:
        raise InvalidArgument("partitions must be >= 1")
    return ["{p" + "[0-9]" * d + "}" for d in range(1, len(str(partitions - 1)) + 1)]


def agent_rules(agent_id: str, teams: Iterable[str], partitions: int) -> list[str]:
    """``ACL SETUSER`` rules (without the password) confining one agent.

    Root permissions: read/write the agent's and its teams' scope keys, read ``collective``,
    read the cfg hashes and registry records of its own and team scopes and ``bb:config``;
    :data:`AGENT_COMMANDS`. Selectors grant the partition-wide keys the scripts append to,
    each write-only and for the one command needed.
    """
    a = validate_name(agent_id, "agent id")
    ts = sorted({validate_name(t, "team") for t in teams})
    owned = [f"agent:{a}"] + [f"team:{t}" for t in ts]
    tags = partition_tags(partitions)
    rules = ["on", "resetkeys", "resetchannels", "clearselectors", "-@all"]
    for tag in tags:
        base = f"{K.ROOT}:{tag}"
        for s in owned:
            # ``team:t`` itself is a scope (the team root); ``agent:a`` holds only levels,
            # but its own name is harmless to include.
            rules += [f"~{base}:s:{s}:*", f"%R~{base}:cfg:{s}", f"%R~{base}:cfg:{s}:*"]
        rules += [f"%R~{base}:s:collective:*", f"%R~{base}:cfg:collective",
                  f"%R~{base}:cfg:collective:*", f"%R~{base}:flowmark",
                  f"%R~{base}:indexing"]
    for s in [*owned, "collective"]:
        rules += [f"%R~{K.scope_record(s)}", f"%R~{K.scope_record(s)}:*"]
    rules.append(f"%R~{K.CONFIG}")
    rules += [f"+{c}" for c in AGENT_COMMANDS]
    # Selectors: a command passes when the root or one selector allows it with its keys.
    # Nothing on the buses: the scripts RPUSH content events to the inbox (RPUSH has no
    # trimming or id options), and the relay, as the service user, fills the buses.
    inbox = " ".join(f"%W~{K.ROOT}:{t}:inbox" for t in tags)
    sets = " ".join(f"%W~{K.ROOT}:{t}:scopes %W~{K.ROOT}:{t}:retired" for t in tags)
    sched = " ".join(f"%W~{K.ROOT}:{t}:ttl %W~{K.ROOT}:{t}:prune" for t in tags)
    # The queue of entries waiting for a vector: ZADD only (removing would deny another
    # agent's entry its vector; the index role, as the service user, settles it).
    queue = " ".join(f"%W~{K.ROOT}:{t}:unembedded" for t in tags)
    rules += [f"({inbox} +rpush)", f"({sets} +sadd)", f"({sched} +zadd +zrem)",
              f"({queue} +zadd)"]
    return rules


@dataclass(frozen=True, slots=True)
class Grant:
    """Outcome of a grant: the user, and its new password (None when it was kept)."""

    username: str
    password: str | None
    agent: str | None = None
    teams: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AgentUser:
    """One provisioned agent user, as ``acl list`` shows it."""

    agent: str
    username: str
    teams: tuple[str, ...]
    enabled: bool
    exists: bool  # the Redis user exists (False: recorded but deleted behind our back)


def pairs(reply: Any) -> dict[str, Any]:
    """A name/value reply (``CONFIG GET``, ``ACL GETUSER``) as a str-keyed dict, whether
    the client parsed it into a dict or left it a flat list; {} for nil."""
    if reply is None:
        return {}
    items = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2], strict=True)
    return {as_str(k): v for k, v in items}


class AclAdmin:
    """Creates, updates and removes the ACL users; needs an admin connection (``bb``)."""

    def __init__(self, bb: Any) -> None:
        self.bb = bb

    async def _on_all_nodes(self, *args: Any) -> Any:
        """Run an ACL command on every node (ACLs are per node, also on a cluster)."""
        try:
            if self.bb.cluster:
                # The node list, not the ALL_NODES flag: redis-py 8 resolves a flag only for
                # commands it knows, and raises "Missing key" for ACL subcommands.
                return await self.bb.client.execute_command(
                    *args, target_nodes=self.bb.client.get_nodes()
                )
            return await self.bb.client.execute_command(*args)
        except AccessDenied as exc:
            raise AccessDenied(f"managing ACL users needs an admin Redis user: {exc}",
                               by_server=True) from exc

    async def _on_one_node(self, *args: Any) -> Any:
        """An ACL command's reply from one node (every node holds the same users)."""
        got = await self._on_all_nodes(*args)
        if isinstance(got, dict) and self.bb.cluster:  # per-node replies
            return next(iter(got.values()), None)
        return got

    def nodes(self) -> list[Any]:
        """Every node of a cluster; ``[None]`` (the one server) otherwise."""
        return list(self.bb.client.get_nodes()) if self.bb.cluster else [None]

    async def on_node(self, node: Any, *args: Any) -> Any:
        """One command's reply from one node (see :meth:`nodes`)."""
        try:
            if node is None:
                return await self.bb.client.execute_command(*args)
            return await self.bb.client.execute_command(*args, target_nodes=[node])
        except AccessDenied as exc:
            raise AccessDenied(f"managing ACL users needs an admin Redis user: {exc}",
                               by_server=True) from exc

    async def per_node(self, *args: Any) -> dict[str, Any]:
        """One command's reply from each node, by node name ("server" on a single Redis):
        ACL users and server settings are per node, and one node may differ."""
        return {("server" if n is None else n.name): await self.on_node(n, *args)
                for n in self.nodes()}

    async def save(self) -> bool:
        """``ACL SAVE`` on every node that has an aclfile, so the users survive a restart
        (``ACL SETUSER`` changes only memory); False when no node has one."""
        saved = False
        for node in self.nodes():
            if pairs(await self.on_node(node, "CONFIG", "GET", "aclfile")).get("aclfile"):
                await self.on_node(node, "ACL", "SAVE")
                saved = True
        return saved

    async def _user_exists(self, username: str) -> bool:
        got = await self._on_all_nodes("ACL", "GETUSER", username)
        if isinstance(got, dict) and self.bb.cluster:  # per-node replies
            return all(v is not None for v in got.values())
        return got is not None

    async def _set(self, username: str, rules: Sequence[str], password: str | None) -> None:
        pw = ["resetpass", f">{password}"] if password is not None else []
        await self._on_all_nodes("ACL", "SETUSER", username, *pw, *rules)
        await self.save()

    async def grant(
        self, agent_id: str, teams: Iterable[str] = (), *, password: str | None = None,
        rotate: bool = False,
    ) -> Grant:
        """Create or update the agent's user for exactly ``teams``.

        A new user (or ``rotate=True``) gets a generated password, returned once; an update
        keeps the existing password (returned as None) unless ``password`` is given.
        """
        user = agent_username(agent_id)
        ts = tuple(sorted({validate_name(t, "team") for t in teams}))
        rules = agent_rules(agent_id, ts, self.bb.partitions)
        exists = await self._user_exists(user)
        if password is None and (rotate or not exists):
            password = secrets.token_urlsafe(32)
        await self._set(user, rules, password)
        await self.bb.client.hset(K.ACL_AGENTS, agent_id, json.dumps(list(ts)))
        await self.load_scripts()  # agents may not load them; make sure they are there
        return Grant(user, password, agent_id, ts)

    async def teams_of(self, agent_id: str) -> tuple[str, ...]:
        raw = await self.bb.client.hget(K.ACL_AGENTS, validate_name(agent_id, "agent id"))
        if raw is None:
            raise NotFound(f"agent {agent_id!r} has no ACL user (run `blackboard acl grant`)")
        return tuple(json.loads(raw))

    async def set_teams(self, agent_id: str, teams: Iterable[str]) -> Grant:
        """Change an existing agent's teams (the password is kept)."""
        await self.teams_of(agent_id)
        return await self.grant(agent_id, teams)

    async def add_team(self, agent_id: str, team: str) -> Grant:
        return await self.set_teams(agent_id, {*await self.teams_of(agent_id), team})

    async def remove_team(self, agent_id: str, team: str) -> Grant:
        return await self.set_teams(agent_id, set(await self.teams_of(agent_id)) - {team})

    async def revoke(self, agent_id: str) -> bool:
        """Delete the agent's user (Redis disconnects its clients); False if there was none."""
        user = agent_username(agent_id)
        n = await self._on_all_nodes("ACL", "DELUSER", user)
        await self.save()
        if isinstance(n, dict):
            n = max(int(v) for v in n.values())
        removed = int(await self.bb.client.hdel(K.ACL_AGENTS, agent_id))
        return bool(int(n) or removed)

    async def list(self) -> list[AgentUser]:
        """Every agent with a recorded grant or an existing ``bb-agent-*`` user."""
        recorded = {as_str(k): tuple(json.loads(v))
                    for k, v in (await self.bb.client.hgetall(K.ACL_AGENTS)).items()}
        names = await self._on_one_node("ACL", "USERS")
        users = {as_str(n) for n in names or ()}
        agents = set(recorded) | {u[len(AGENT_USER_PREFIX):] for u in users
                                  if u.startswith(AGENT_USER_PREFIX)}
        out = []
        for a in sorted(agents):
            user = AGENT_USER_PREFIX + a
            enabled = False
            if user in users:
                info: Any = await self._on_one_node("ACL", "GETUSER", user)
                if isinstance(info, dict):
                    flags: Any = info.get(b"flags", info.get("flags")) or []
                else:
                    flags = info[info.index(b"flags") + 1]
                enabled = "on" in {as_str(f) for f in flags}
            out.append(AgentUser(a, user, recorded.get(a, ()), enabled, user in users))
        return out

    async def grant_service(self, *, password: str | None = None, rotate: bool = False) -> Grant:
        """Create or update the service user (workers, CLI)."""
        exists = await self._user_exists(SERVICE_USER)
        if password is None and (rotate or not exists):
            password = secrets.token_urlsafe(32)
        await self._set(SERVICE_USER, SERVICE_RULES, password)
        await self.load_scripts()
        return Grant(SERVICE_USER, password)

    async def load_scripts(self) -> int:
        """SCRIPT LOAD every script (on every primary of a cluster); their count."""
        for s in SCRIPTS.all():
            if self.bb.cluster:
                await self.bb.client.execute_command(
                    "SCRIPT", "LOAD", s.source, target_nodes=self.bb.client.get_primaries()
                )
            else:
                await self.bb.client.script_load(s.source)
        return len(SCRIPTS.all())
