"""Opening a :class:`~blackboard.board.Blackboard` from the settings
:meth:`Blackboard.connect <blackboard.board.Blackboard.connect>` resolved: the checks on
them, the client (:mod:`blackboard.connection`), and the server's first use -- the partition
count and schema pinned in ``bb:config``, the clock synced, the scripts loaded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import keys as K
from . import tracing
from .connection import open_client, warn_on_unsafe_server
from .durability import check_waitaof_supported
from .errors import AccessDenied, ConfigMismatch, InvalidArgument, LoginRefused, ServerUnavailable
from .redact import mask_url
from .scripts import SCRIPTS
from .settings import ClientSettings

if TYPE_CHECKING:
    from .board import Blackboard

__all__ = ["SCHEMA_VERSION", "open_blackboard"]

SCHEMA_VERSION = "1"


async def open_blackboard(
    cls: type[Blackboard],
    s: ClientSettings,
    username: str | None,
    password: str | None,
    explicit_partitions: bool,
) -> Blackboard:
    """A ``cls`` on a client for ``s.redis_url`` logged in as ``username``/``password``,
    with ``bb:config`` pinned (:func:`pin_config`); closed again if that fails."""
    if s.tracing and not tracing.ENABLED:
        try:
            tracing.enable()
        except ImportError as exc:  # one line naming the extra, as any bad setting
            raise InvalidArgument(f"BLACKBOARD_TRACING is on but {exc}") from None
    if not s.redis_url:
        raise InvalidArgument(
            "no Redis URL: pass one or set BLACKBOARD_REDIS_URL "
            "(`blackboard server` starts an embedded one)"
        )
    if "://" not in s.redis_url:
        raise InvalidArgument(
            f"Redis URL {mask_url(s.redis_url)!r} has no scheme: write it as "
            f"redis://{mask_url(s.redis_url)}/0 (or rediss://, unix://)"
        )
    auth: dict[str, Any] = {}
    if username is not None:
        auth["username"] = username
    if password is not None:
        auth["password"] = password
    client, is_cluster = await open_client(s.redis_url, s, auth)
    bb = cls(client, s, bool(is_cluster))
    bb.auth = dict(auth)
    try:
        await check_waitaof_supported(client, s)
        await pin_config(bb, explicit_partitions)
    except BaseException:
        await bb.close()
        raise
    return bb


async def pin_config(bb: Blackboard, explicit: bool) -> None:
    """Pin ``bb.partitions`` (and the schema) in ``bb:config`` at first use; later, check
    against it: a mismatch raises :class:`ConfigMismatch` when ``explicit`` (the caller
    asked for a count), else ``bb`` follows the pinned value. Then load the scripts."""
    try:
        got = await bb.client.hget(K.CONFIG, "partitions")
        if got is None:
            await bb.client.hsetnx(K.CONFIG, "partitions", bb.partitions)
            await bb.client.hsetnx(K.CONFIG, "schema", SCHEMA_VERSION)
            got = await bb.client.hget(K.CONFIG, "partitions")
        await bb.clock.sync(bb.client)
    except (ServerUnavailable, OSError) as exc:
        # A refused login (LoginRefused) stays one: the caller tells it apart.
        typ = LoginRefused if isinstance(exc, LoginRefused) else ServerUnavailable
        err = typ(f"cannot reach Redis: {exc}")
        if isinstance(exc, LoginRefused):
            err.redis_message = exc.redis_message
        raise err from exc
    pinned = int(got)
    if pinned != bb.partitions:
        if explicit:
            raise ConfigMismatch(
                f"this Redis is pinned to {pinned} partitions; the client asked for "
                f"{bb.partitions}"
            )
        bb.partitions = pinned  # follow the pinned value when the caller did not ask
    await load_scripts(bb.client)
    await warn_on_unsafe_server(bb.client)


async def load_scripts(client: Any) -> None:
    """SCRIPT LOAD every script, so a confined agent's EVALSHA finds them."""
    for script in SCRIPTS.all():
        try:
            await client.script_load(script.source)
        except AccessDenied:
            return  # a confined user may not SCRIPT LOAD; EVALSHA falls back lazily
