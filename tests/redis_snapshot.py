"""A byte-exact picture of a whole Redis, to prove that a refused call changed nothing."""

from __future__ import annotations

import redis

__all__ = ["Snapshot", "snapshot_of"]

Snapshot = dict[bytes, bytes]


def snapshot_of(r: redis.Redis) -> Snapshot:
    """Every key with its DUMP payload (DEBUG DIGEST is disabled by default on Redis >= 7).

    DUMP is byte-exact for a value, so any change of any key (or a new/removed key) shows.
    """
    return {k: d for k in r.scan_iter(count=1000) if (d := r.dump(k)) is not None}
