"""Worker processes: roles, leases, the dataflow runner, heartbeats and metrics.

A worker process is started by the ``blackboard worker`` command (:mod:`cli`), which also
caps native thread pools before numpy loads (:func:`cli.cap_native_threads`). Exported
here: what an application needs to run a worker in its own process (:class:`Worker`, its
settings, the role names); the rest is imported from its module.

Names load lazily (PEP 562), as in :mod:`retrieval`: importing one submodule (the CLI reads
``workers.roles`` for its help) does not pull in every role's dependencies.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .roles import ROLES
    from .settings import WorkerSettings
    from .worker import Worker

_WHERE = {"ROLES": "roles", "Worker": "worker", "WorkerSettings": "settings"}

__all__ = ["ROLES", "Worker", "WorkerSettings"]


def __getattr__(name: str) -> Any:
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value
