"""Worker roles as plug-ins: what a :class:`workers.worker.Worker` runs besides its
lifecycle, leases and heartbeat.

What a role is, and the registry of roles by name, live in :mod:`.registry`
(:func:`register_role` for a role of your own). The built-in roles are registered here, in
this order: one consolidation edge runner per transformer role of the consolidation
registry (:mod:`.consolidation`), ``timeline`` (:mod:`.timeline`: the tables of
contents, an edge runner with its own bridge), ``index`` (:mod:`.index`) and ``maintenance``
(:mod:`.maintenance`). Every list of role names is derived from the registry.
"""

from __future__ import annotations

from . import consolidation, index, maintenance, timeline
from .registry import (
    Role,
    RoleHost,
    RoleSpec,
    register_role,
    registered,
    role_spec,
    roles_running,
)

__all__ = [
    "BUS_GROUP_ROLES",
    "CONSUMING_ROLES",
    "EDGE_ROLES",
    "ROLES",
    "Role",
    "RoleHost",
    "RoleSpec",
    "register_role",
    "role_spec",
    "roles_running",
]

for _spec in (*consolidation.SPECS, *timeline.SPECS, *index.SPECS, *maintenance.SPECS):
    register_role(_spec)

#: Every worker role; ``all`` runs each of them in one process.
ROLES: tuple[str, ...] = tuple(s.name for s in registered())
#: The roles that read the partition buses (see :attr:`RoleSpec.consumes`).
CONSUMING_ROLES: tuple[str, ...] = tuple(s.name for s in registered() if s.consumes)
#: The roles that read the buses through a consumer group of their name.
BUS_GROUP_ROLES: tuple[str, ...] = tuple(
    s.name for s in registered() if s.consumes and not s.no_group
)
#: The roles that run dataflow edges (consolidation edge runners).
EDGE_ROLES: tuple[str, ...] = tuple(s.name for s in registered() if s.transformers)
